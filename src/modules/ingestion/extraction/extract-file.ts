import type { ExtractedText } from 'src/common/text/extracted-text.js';
import { isVisibleText } from 'src/common/validation/json-value.js';
import type { DocumentKind } from 'src/modules/documents/file-kinds.js';
import { extractDocx, extractPdf, extractPptx } from 'src/modules/ingestion/extraction/office.extractor.js';
import {
  extractCsv,
  extractJson,
  extractXml,
  extractYaml,
} from 'src/modules/ingestion/extraction/structured.extractor.js';
import { decodeText, withoutControlCharacters } from 'src/common/text/text-decoding.js';
import { IngestionErrors } from 'src/modules/ingestion/ingestion.errors.js';

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
      return extractCsv(textOf(kind, bytes));
    case 'json':
      return extractJson(textOf(kind, bytes));
    case 'xml':
      return extractXml(textOf(kind, bytes));
    case 'yaml':
      return extractYaml(textOf(kind, bytes));
    case 'markdown':
      return { format: 'markdown', sections: [{ text: textOf(kind, bytes) }] };
    case 'code':
      return { format: 'code', sections: [{ text: textOf(kind, bytes) }] };
    case 'text':
      return { format: 'prose', sections: [{ text: textOf(kind, bytes) }] };
  }
}

/**
 * The decoded text of a text file. One of white space and invisible characters alone has no text
 * whatever its format: it fails with `no_text_extracted` before a parser sees it, as a .txt file does,
 * rather than with the parser's words for empty input (`invalid_document`), or as a CSV of one blank
 * header and one blank value (`" : "`, which was ready with that chunk).
 */
function textOf(kind: ParsedKind, bytes: Buffer): string {
  const { text } = decodeText(bytes);
  if (!isVisibleText(text)) throw IngestionErrors.noText(kind);
  return text;
}
