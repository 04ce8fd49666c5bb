import { type ConfigOf, int, section } from 'src/config/define.js';

export const ocrSection = section('OCR_CONFIG', {
  title: 'OCR',
  variables: {
    /** 0: one per core. */
    workers: int('OCR_WORKERS', {
      default: 0,
      min: 0,
      max: 64,
      defaultText: 'cores',
      description: 'tesseract.js workers per process',
    }),
    maxPixels: int('OCR_MAX_PIXELS', {
      default: 40_000_000,
      min: 1,
      max: 1_000_000_000,
      description:
        'larger images are refused (`image_too_large`); images of small text are read enlarged only while the ' +
        'copy stays within it (docs/ingestion.md, OCR settings)',
    }),
  },
});

export const OCR_CONFIG = ocrSection.token;
export type OcrConfig = ConfigOf<typeof ocrSection>;
