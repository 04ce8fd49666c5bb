import { isVisibleText } from 'src/common/validation/json-value.js';

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

/** Whether any section has a character that shows (a file of zero-width spaces has none). */
export function hasText(extracted: ExtractedText): boolean {
  return extracted.sections.some((section) => isVisibleText(section.text));
}
