import {
  type ExtractedText,
  withoutControlCharacters,
} from 'src/modules/ingestion/extraction/extracted-text.js';
import type { DocumentKind } from 'src/modules/ingestion/extraction/file-kinds.js';
import { extractDocx, extractPdf, extractPptx } from 'src/modules/ingestion/extraction/office.extractor.js';
import {
  extractCsv,
  extractJson,
  extractXml,
  extractYaml,
} from 'src/modules/ingestion/extraction/structured.extractor.js';
import { decodeText } from 'src/modules/ingestion/extraction/text-decoding.js';

/** The kinds whose text is read from the file itself (images go to OCR). */
export type ParsedKind = Exclude<DocumentKind, 'image'>;

/**
 * The text of a file of any kind but an image, organised in sections (pages, slides) for citation,
 * without control characters. It runs in an extraction thread (`extraction.worker.ts`): parsing a
 * 10 MB file takes up to seconds of synchronous JavaScript.
 */
export async function extractFile(kind: ParsedKind, bytes: Buffer): Promise<ExtractedText> {
  return withoutControlCharacters(await extractRaw(kind, bytes));
}

function extractRaw(kind: ParsedKind, bytes: Buffer): Promise<ExtractedText> | ExtractedText {
  switch (kind) {
    case 'pdf':
      return extractPdf(bytes);
    case 'docx':
      return extractDocx(bytes);
    case 'pptx':
      return extractPptx(bytes);
    case 'csv':
      return extractCsv(decodeText(bytes).text);
    case 'json':
      return extractJson(decodeText(bytes).text);
    case 'xml':
      return extractXml(decodeText(bytes).text);
    case 'yaml':
      return extractYaml(decodeText(bytes).text);
    case 'markdown':
      return { format: 'markdown', sections: [{ text: decodeText(bytes).text }] };
    case 'code':
      return { format: 'code', sections: [{ text: decodeText(bytes).text }] };
    case 'text':
      return { format: 'prose', sections: [{ text: decodeText(bytes).text }] };
  }
}
