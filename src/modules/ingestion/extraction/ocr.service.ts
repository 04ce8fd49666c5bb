import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import sharp from 'sharp';
import { createScheduler, createWorker, OEM, type Page, PSM, type Scheduler } from 'tesseract.js';
import type { ExtractedText } from 'src/common/text/extracted-text.js';
import { OCR_CONFIG, type OcrConfig } from 'src/modules/ingestion/extraction/ocr.config.js';
import { IngestionErrors } from 'src/modules/ingestion/ingestion.errors.js';

/** English traineddata shipped in an npm package: nothing is downloaded at run time. */
const ENGLISH = createRequire(import.meta.url)('@tesseract.js-data/eng') as {
  langPath: string;
  gzip: boolean;
};

/** Tesseract's words (from Leptonica) for an image it cannot decode. */
const UNREADABLE_IMAGE = /error attempting to read image/i;

/**
 * Text lines lower than this (median, in pixels) are read from an enlarged copy of the image: below it
 * the LSTM misreads the characters of screenshots and 72-dpi pages (docs/ingestion.md, OCR settings).
 */
const SMALL_TEXT_LINE_PX = 20;
/** Enough to read every cell of the test table (test/fixtures); more costs time for few more words. */
const UPSCALE = 1.5;

/** The result of a layout-only pass: blocks of lines, no text (tesseract.js's types omit it). */
type Layout = Page & {
  layoutBlocks: { paragraphs: { lines: { bbox: { y0: number; y1: number } }[] }[] }[] | null;
};

/**
 * Text from images with tesseract.js. A pool of workers (one per core by default) is started on first
 * use and shared by every job of the process; images over the pixel limit are refused before decoding.
 */
@Injectable()
export class OcrService implements OnApplicationShutdown {
  private scheduler?: Promise<Scheduler>;

  constructor(@Inject(OCR_CONFIG) private readonly config: OcrConfig) {}

  async extract(bytes: Buffer): Promise<ExtractedText> {
    let pixels: number;
    let width: number;
    try {
      // The header alone, without sharp's own limit of 268,402,689 pixels, which OCR_MAX_PIXELS (up to
      // 1e9) may pass: under it, a larger image was refused here as invalid_document ("Input image
      // exceeds pixel limit") rather than as image_too_large. metadata() decodes no pixels, so the
      // configured limit below is the one that governs.
      const { autoOrient } = await sharp(bytes, { limitInputPixels: false }).metadata();
      ({ width } = autoOrient);
      pixels = width * autoOrient.height;
    } catch (error) {
      throw IngestionErrors.invalidDocument('image', (error as Error).message);
    }
    if (pixels > this.config.maxPixels) throw IngestionErrors.imageTooLarge(pixels, this.config.maxPixels);
    try {
      const scheduler = await this.pool();
      const image = (await this.smallText(scheduler, bytes, pixels)) ? await enlarged(bytes, width) : bytes;
      const { data } = await scheduler.addJob('recognize', image);
      return { format: 'prose', sections: [{ text: data.text, page: 1 }] };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // Leptonica could not decode what sharp's header check let through (a truncated JPEG): the file,
      // not the recognition, is at fault.
      if (UNREADABLE_IMAGE.test(message)) throw IngestionErrors.invalidDocument('image', message);
      throw IngestionErrors.ocrFailed(message);
    }
  }

  /**
   * Whether the image's text lines are small, by a layout pass (about a tenth of the recognition's
   * time). An image whose enlarged copy would pass OCR_MAX_PIXELS is read as it is, unmeasured.
   */
  private async smallText(scheduler: Scheduler, bytes: Buffer, pixels: number): Promise<boolean> {
    if (pixels * UPSCALE ** 2 > this.config.maxPixels) return false;
    const { data } = await scheduler.addJob('recognize', bytes, {}, { text: false, layoutBlocks: true });
    const heights = ((data as Layout).layoutBlocks ?? []).flatMap((block) =>
      block.paragraphs.flatMap((paragraph) => paragraph.lines.map(({ bbox }) => bbox.y1 - bbox.y0)),
    );
    return heights.length > 0 && median(heights) < SMALL_TEXT_LINE_PX;
  }

  private pool(): Promise<Scheduler> {
    this.scheduler ??= (async () => {
      const scheduler = createScheduler();
      const size = this.config.workers || availableParallelism();
      const workers = await Promise.all(
        Array.from({ length: size }, () =>
          createWorker('eng', OEM.LSTM_ONLY, {
            langPath: ENGLISH.langPath,
            gzip: ENGLISH.gzip,
            cacheMethod: 'none',
            // Without a handler, a worker's error is rethrown asynchronously and kills the process.
            errorHandler: () => undefined,
          }),
        ),
      );
      // Tesseract's own default is one uniform block of text (PSM 6), which merges the cells of a table
      // into lines and drops what does not fit them; its command line, like this, analyses the layout.
      await Promise.all(workers.map((worker) => worker.setParameters({ tessedit_pageseg_mode: PSM.AUTO })));
      workers.forEach((worker) => scheduler.addWorker(worker));
      return scheduler;
    })();
    // A pool that failed to start is not kept: the next image tries again.
    this.scheduler.catch(() => (this.scheduler = undefined));
    return this.scheduler;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.scheduler) await (await this.scheduler).terminate();
  }
}

/**
 * The image enlarged by UPSCALE, as Tesseract would read it (turned by its EXIF orientation, transparency
 * on white), in grey PGM: Leptonica reads that without decompressing it, PNG would cost it a tenth more.
 */
async function enlarged(bytes: Buffer, width: number): Promise<Buffer> {
  const { data, info } = await sharp(bytes, { limitInputPixels: false, failOn: 'none', autoOrient: true })
    .flatten({ background: '#ffffff' })
    .greyscale()
    .resize({ width: Math.round(width * UPSCALE) })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return Buffer.concat([Buffer.from(`P5\n${info.width} ${info.height}\n255\n`), data]);
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[values.length >> 1];
}
