import type { ExtractedText } from 'src/common/text/extracted-text.js';

/**
 * Turns the bytes of a text file into a string. The byte order mark decides (UTF-8, UTF-16 LE/BE);
 * without one, strict UTF-8; UTF-16 without a BOM is recognised by its zero bytes; anything else is
 * read as Windows-1252 (a superset of Latin-1), which never fails and is what such files usually are.
 */
export function decodeText(bytes: Buffer): { text: string; encoding: string } {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    return { text: new TextDecoder('utf-8').decode(bytes.subarray(3)), encoding: 'utf-8' };
  }
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) {
    return { text: new TextDecoder('utf-16le').decode(bytes.subarray(2)), encoding: 'utf-16le' };
  }
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) {
    return { text: new TextDecoder('utf-16be').decode(bytes.subarray(2)), encoding: 'utf-16be' };
  }
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    const utf16 = utf16WithoutBom(bytes);
    if (utf16) return { text: new TextDecoder(utf16).decode(bytes), encoding: utf16 };
    return { text, encoding: 'utf-8' };
  } catch {
    const utf16 = utf16WithoutBom(bytes);
    if (utf16) return { text: new TextDecoder(utf16).decode(bytes), encoding: utf16 };
    return { text: new TextDecoder('windows-1252').decode(bytes), encoding: 'windows-1252' };
  }
}

/** ASCII-heavy UTF-16 has a zero in every other byte: at even offsets for BE, odd ones for LE. */
function utf16WithoutBom(bytes: Buffer): 'utf-16le' | 'utf-16be' | null {
  const sample = bytes.subarray(0, Math.min(bytes.length, 4096) & ~1);
  if (sample.length < 4) return null;
  let evenZeros = 0;
  let oddZeros = 0;
  for (let i = 0; i < sample.length; i += 2) {
    if (sample[i] === 0) evenZeros++;
    if (sample[i + 1] === 0) oddZeros++;
  }
  const pairs = sample.length / 2;
  if (oddZeros > pairs * 0.4 && evenZeros < pairs * 0.05) return 'utf-16le';
  if (evenZeros > pairs * 0.4 && oddZeros < pairs * 0.05) return 'utf-16be';
  return null;
}

/** Control characters other than tab and line breaks carry no text and upset tokenizers. */
export function stripControlCharacters(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '');
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

/**
 * Whether bytes are text in an encoding `decodeText` reads: a byte order mark, UTF-16 without one, or
 * no NUL bytes and few control characters in the first 8 KB. Signature sniffers mistake some text for
 * binary formats (UTF-16 text can look like MPEG audio), so text files are judged by this instead.
 */
export function looksLikeText(bytes: Buffer): boolean {
  if (bytes.length === 0) return true;
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return true;
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) return true;
  if (utf16WithoutBom(bytes)) return true;
  const sample = bytes.subarray(0, 8192);
  let control = 0;
  for (const byte of sample) {
    if (byte === 0) return false;
    if (byte < 0x09 || (byte > 0x0d && byte < 0x20 && byte !== 0x1b)) control++;
  }
  return control <= sample.length * 0.05;
}

/**
 * The character a numeric character reference (`&#233;`, `&#xE9;`) names, or undefined for a number
 * that names none: beyond Unicode (`String.fromCodePoint` would throw), or half of a surrogate pair,
 * which cannot stand alone in text.
 */
export function referencedCharacter(codePoint: number): string | undefined {
  const valid = codePoint <= 0x10ffff && !(codePoint >= 0xd800 && codePoint <= 0xdfff);
  return valid ? String.fromCodePoint(codePoint) : undefined;
}
