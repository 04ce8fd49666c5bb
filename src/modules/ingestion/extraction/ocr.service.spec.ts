import sharp from 'sharp';
import type { Scheduler } from 'tesseract.js';
import { OcrService } from 'src/modules/ingestion/extraction/ocr.service.js';
import { PermanentProcessingError } from 'src/modules/ingestion/ingestion.errors.js';
import { blackPng } from '../../../../test/utils/png.js';

/** The service with the pixel limit given, and a recognizer that answers "recognised" to any image. */
function ocrService(maxPixels: number): OcrService {
  const service = new OcrService({ workers: 1, maxPixels });
  const scheduler = { addJob: () => Promise.resolve({ data: { text: 'recognised' } }) };
  (service as unknown as { pool: () => Promise<Scheduler> }).pool = () =>
    Promise.resolve(scheduler as unknown as Scheduler);
  return service;
}

async function failure(promise: Promise<unknown>): Promise<PermanentProcessingError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof PermanentProcessingError))
    throw new Error(`expected a failure, got ${String(error)}`);
  return error;
}

describe('OcrService pixel limit', () => {
  // sharp refuses to read even the header of an image over 268,402,689 pixels unless told otherwise;
  // that refusal came out as invalid_document "Input image exceeds pixel limit".
  it.each([
    ['10000 × 5000 pixels', 10_000, 5_000, false, 40_000_000],
    ['16384 × 16384, past sharp’s own limit', 16_384, 16_384, false, 40_000_000],
    ['40000 × 40000 (its header), past OCR_MAX_PIXELS at its highest', 40_000, 40_000, true, 1_000_000_000],
  ])(
    'fails an image over OCR_MAX_PIXELS with image_too_large: %s',
    async (_, width, height, headerOnly, limit) => {
      const error = await failure(ocrService(limit).extract(blackPng(width, height, { headerOnly })));
      expect(error.code).toBe('image_too_large');
      expect(error.details).toEqual({ pixels: width * height, limit_pixels: limit });
    },
  );

  it('reads an image past sharp’s own limit but within OCR_MAX_PIXELS', async () => {
    const image = blackPng(20_000, 20_000, { headerOnly: true });
    expect(await ocrService(1_000_000_000).extract(image)).toEqual({
      format: 'prose',
      sections: [{ text: 'recognised', page: 1 }],
    });
  });

  it('fails an image whose header cannot be read with invalid_document', async () => {
    const error = await failure(ocrService(40_000_000).extract(blackPng(64, 32).subarray(0, 20)));
    expect(error.code).toBe('invalid_document');
  });
});

describe('OcrService small text', () => {
  /** The service with a recognizer whose layout pass finds lines of the given heights; it keeps what it reads. */
  function withLines(heights: number[], maxPixels = 40_000_000) {
    const service = new OcrService({ workers: 1, maxPixels });
    const read: Buffer[] = [];
    let layoutPasses = 0;
    const lines = heights.map((height) => ({ bbox: { y0: 10, y1: 10 + height } }));
    const scheduler = {
      addJob: (_: string, image: Buffer, __: unknown, output?: { layoutBlocks?: boolean }) => {
        if (output?.layoutBlocks) {
          layoutPasses++;
          return Promise.resolve({ data: { text: null, layoutBlocks: [{ paragraphs: [{ lines }] }] } });
        }
        read.push(image);
        return Promise.resolve({ data: { text: 'recognised' } });
      },
    };
    (service as unknown as { pool: () => Promise<Scheduler> }).pool = () =>
      Promise.resolve(scheduler as unknown as Scheduler);
    return { service, read, layoutPasses: () => layoutPasses };
  }

  const pgmHeader = (image: Buffer) =>
    /^P5\n(\d+) (\d+)\n255\n/.exec(image.subarray(0, 32).toString('latin1'));

  it('reads an image whose lines are under 20 px from a grey copy 1.5 times its size', async () => {
    const { service, read } = withLines([13, 12, 13, 40]);
    await service.extract(blackPng(200, 100));
    expect(read).toHaveLength(1);
    const header = pgmHeader(read[0]);
    expect(header?.slice(1)).toEqual(['300', '150']);
    expect(read[0].length).toBe(header![0].length + 300 * 150);
  });

  it('enlarges an image as it is shown: turned by its EXIF orientation', async () => {
    const { service, read } = withLines([12]);
    const sideways = await sharp(blackPng(200, 100)).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    await service.extract(sideways);
    expect(pgmHeader(read[0])?.slice(1)).toEqual(['150', '300']);
  });

  it('reads an image with lines of 20 px and more as it is', async () => {
    const { service, read } = withLines([31, 30, 12]);
    const image = blackPng(200, 100);
    await service.extract(image);
    expect(read).toEqual([image]);
  });

  it('reads an image in which the layout pass finds no line as it is', async () => {
    const { service, read } = withLines([]);
    const image = blackPng(200, 100);
    await service.extract(image);
    expect(read).toEqual([image]);
  });

  it('reads an image as it is, unmeasured, when its enlarged copy would pass OCR_MAX_PIXELS', async () => {
    const { service, read, layoutPasses } = withLines([12], 40_000);
    const image = blackPng(200, 100);
    await service.extract(image);
    expect(read).toEqual([image]);
    expect(layoutPasses()).toBe(0);
  });
});
