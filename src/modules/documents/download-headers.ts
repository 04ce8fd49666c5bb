import type { DocumentEntity } from 'src/modules/documents/document.entity.js';

/**
 * The name a document's original is downloaded under: its file name, or for text sent as JSON (which
 * has none) its id with `.txt`.
 */
export function downloadName(document: Pick<DocumentEntity, 'id' | 'filename'>): string {
  return document.filename ?? `${document.id}.txt`;
}

/**
 * `Content-Disposition: attachment` for `filename` (RFC 6266): an ASCII `filename` for clients that read
 * only that, every character outside printable ASCII (and `"` and `\`) shown as `_`, and the exact name
 * as `filename*`, UTF-8 percent-encoded (RFC 8187, formerly 5987).
 */
export function attachmentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/gu, '_');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${extValue(filename)}`;
}

/**
 * RFC 8187's `value-chars`: `attr-char`s as they are, every other byte of the UTF-8 as `%XX`.
 * `encodeURIComponent` leaves `'()*` as they are, which `attr-char` does not allow.
 */
function extValue(text: string): string {
  return encodeURIComponent(text).replace(
    /['()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * The `Content-Type` of a document's original: its stored media type; text sent as JSON was stored as
 * UTF-8, which its type then says. A file's own encoding is not known for certain, so none is claimed.
 */
export function downloadType(document: Pick<DocumentEntity, 'filename' | 'mediaType'>): string {
  return document.filename === null ? `${document.mediaType}; charset=utf-8` : document.mediaType;
}
