import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import sharp from 'sharp';
import { createScheduler, createWorker, OEM, type Scheduler } from 'tesseract.js';
import type { ExtractedText } from 'src/common/text/extracted-text.js';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';
import { IngestionErrors } from 'src/modules/ingestion/ingestion.errors.js';

/** English traineddata shipped in an npm package: nothing is downloaded at run time. */
const ENGLISH = createRequire(import.meta.url)('@tesseract.js-data/eng') as {
  langPath: string;
  gzip: boolean;
};

/** Tesseract's words (from Leptonica) for an image it cannot decode. */
const UNREADABLE_IMAGE = /error attempting to read image/i;

/**
 * Text from images with tesseract.js. A pool of workers (one per core by default) is started on first
 * use and shared by every job of the process; images over the pixel limit are refused before decoding.
 */
@Injectable()
export class OcrService implements OnApplicationShutdown {
  private scheduler?: Promise<Scheduler>;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async extract(bytes: Buffer): Promise<ExtractedText> {
    let pixels: number;
    try {
      // The header alone, without sharp's own limit of 268,402,689 pixels, which OCR_MAX_PIXELS (up to
      // 1e9) may pass: under it, a larger image was refused here as invalid_document ("Input image
      // exceeds pixel limit") rather than as image_too_large. metadata() decodes no pixels, so the
      // configured limit below is the one that governs.
      const { width = 0, height = 0 } = await sharp(bytes, { limitInputPixels: false }).metadata();
      pixels = width * height;
    } catch (error) {
      throw IngestionErrors.invalidDocument('image', (error as Error).message);
    }
    if (pixels > this.config.ocr.maxPixels)
      throw IngestionErrors.imageTooLarge(pixels, this.config.ocr.maxPixels);
    try {
      const scheduler = await this.pool();
      const { data } = await scheduler.addJob('recognize', bytes);
      return { format: 'prose', sections: [{ text: data.text, page: 1 }] };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // Leptonica could not decode what sharp's header check let through (a truncated JPEG): the file,
      // not the recognition, is at fault.
      if (UNREADABLE_IMAGE.test(message)) throw IngestionErrors.invalidDocument('image', message);
      throw IngestionErrors.ocrFailed(message);
    }
  }

  private pool(): Promise<Scheduler> {
    this.scheduler ??= (async () => {
      const scheduler = createScheduler();
      const size = this.config.ocr.workers || availableParallelism();
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
