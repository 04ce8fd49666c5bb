import type { Scheduler } from 'tesseract.js';
import type { AppConfig } from 'src/config/app-config.js';
import { OcrService } from 'src/modules/ingestion/extraction/ocr.service.js';
import { PermanentProcessingError } from 'src/modules/ingestion/ingestion.errors.js';
import { blackPng } from '../../../../test/utils/png.js';

/** The service with the pixel limit given, and a recognizer that answers "recognised" to any image. */
function ocrService(maxPixels: number): OcrService {
  const service = new OcrService({ ocr: { workers: 1, maxPixels } } as AppConfig);
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
