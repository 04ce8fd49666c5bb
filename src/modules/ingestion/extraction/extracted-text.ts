import { stripControlCharacters } from 'src/modules/ingestion/extraction/text-decoding.js';

/** How the text is organised, which tells the chunker where it may cut. */
export type TextFormat = 'prose' | 'markdown' | 'code' | 'records';

/** A piece of a document's text with its place in the original (page or slide, 1-based). */
export interface TextSection {
  text: string;
  page?: number;
}

export interface ExtractedText {
  format: TextFormat;
  sections: TextSection[];
}

export function hasText(extracted: ExtractedText): boolean {
  return extracted.sections.some((section) => section.text.trim().length > 0);
}

/** The text without control characters (see `stripControlCharacters`), in the same sections. */
export function withoutControlCharacters(extracted: ExtractedText): ExtractedText {
  return {
    format: extracted.format,
    sections: extracted.sections.map((section) => ({
      ...section,
      text: stripControlCharacters(section.text),
    })),
  };
}
