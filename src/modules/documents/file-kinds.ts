import { extname } from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import { looksLikeText } from 'src/common/text/text-decoding.js';

/** What a document is, which decides its extractor and how it is chunked. */
export type DocumentKind =
  'text' | 'markdown' | 'csv' | 'json' | 'xml' | 'yaml' | 'code' | 'pdf' | 'docx' | 'pptx' | 'image';

export interface DetectedType {
  kind: DocumentKind;
  mediaType: string;
}

const CODE_EXTENSIONS = [
  '.py',
  '.js',
  '.mjs',
  '.cjs',
  '.ts',
  '.tsx',
  '.jsx',
  '.java',
  '.go',
  '.rb',
  '.c',
  '.h',
  '.cpp',
  '.cc',
  '.hpp',
  '.cs',
  '.php',
  '.rs',
  '.kt',
  '.kts',
  '.swift',
  '.sh',
  '.bash',
  '.sql',
  '.scala',
  '.lua',
  '.r',
  '.pl',
  '.m',
];

const BY_EXTENSION: Record<string, DetectedType> = {
  '.txt': { kind: 'text', mediaType: 'text/plain' },
  '.text': { kind: 'text', mediaType: 'text/plain' },
  '.md': { kind: 'markdown', mediaType: 'text/markdown' },
  '.markdown': { kind: 'markdown', mediaType: 'text/markdown' },
  '.csv': { kind: 'csv', mediaType: 'text/csv' },
  '.tsv': { kind: 'csv', mediaType: 'text/tab-separated-values' },
  '.json': { kind: 'json', mediaType: 'application/json' },
  '.xml': { kind: 'xml', mediaType: 'application/xml' },
  '.yaml': { kind: 'yaml', mediaType: 'application/yaml' },
  '.yml': { kind: 'yaml', mediaType: 'application/yaml' },
  '.pdf': { kind: 'pdf', mediaType: 'application/pdf' },
  '.docx': {
    kind: 'docx',
    mediaType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  },
  '.pptx': {
    kind: 'pptx',
    mediaType: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  },
  '.jpg': { kind: 'image', mediaType: 'image/jpeg' },
  '.jpeg': { kind: 'image', mediaType: 'image/jpeg' },
  '.png': { kind: 'image', mediaType: 'image/png' },
  ...Object.fromEntries(CODE_EXTENSIONS.map((ext) => [ext, { kind: 'code', mediaType: 'text/plain' }])),
};

/**
 * The text formats a part's declared Content-Type names, for a file whose name has no extension (a
 * `Blob` appended to FormData is called `blob`). Binary formats need no help: their content says.
 */
const BY_DECLARED_TYPE: Record<string, DetectedType> = {
  'text/plain': BY_EXTENSION['.txt'],
  'text/markdown': BY_EXTENSION['.md'],
  'text/x-markdown': BY_EXTENSION['.md'],
  'text/csv': BY_EXTENSION['.csv'],
  'text/tab-separated-values': BY_EXTENSION['.tsv'],
  'application/json': BY_EXTENSION['.json'],
  'application/xml': BY_EXTENSION['.xml'],
  'text/xml': BY_EXTENSION['.xml'],
  'application/yaml': BY_EXTENSION['.yaml'],
  'application/x-yaml': BY_EXTENSION['.yaml'],
  'text/yaml': BY_EXTENSION['.yaml'],
};

/** Binary formats recognised by their content, whatever the file is called. */
const BY_MAGIC: Record<string, DetectedType> = {
  'application/pdf': BY_EXTENSION['.pdf'],
  'image/png': BY_EXTENSION['.png'],
  // An animated PNG is a PNG to every decoder that ignores animation, OCR included.
  'image/apng': BY_EXTENSION['.png'],
  'image/jpeg': BY_EXTENSION['.jpg'],
  [BY_EXTENSION['.docx'].mediaType]: BY_EXTENSION['.docx'],
  [BY_EXTENSION['.pptx'].mediaType]: BY_EXTENSION['.pptx'],
};

const ZIP_AND_OLE = ['application/zip', 'application/x-cfb'];

/**
 * Signatures that do not contradict an Office name, so the file goes to its extractor: a damaged DOCX
 * or PPTX may be recognised only as the ZIP archive it is, a password-protected one is an OLE compound
 * file, and the macro-enabled, template and slide-show variants hold the same parts.
 */
const SAME_FORMAT: Partial<Record<DocumentKind, Set<string>>> = {
  docx: new Set([
    ...ZIP_AND_OLE,
    'application/vnd.ms-word.document.macroenabled.12',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.template',
    'application/vnd.ms-word.template.macroenabled.12',
  ]),
  pptx: new Set([
    ...ZIP_AND_OLE,
    'application/vnd.ms-powerpoint.presentation.macroenabled.12',
    'application/vnd.openxmlformats-officedocument.presentationml.template',
    'application/vnd.ms-powerpoint.template.macroenabled.12',
    'application/vnd.openxmlformats-officedocument.presentationml.slideshow',
    'application/vnd.ms-powerpoint.slideshow.macroenabled.12',
  ]),
};

const TEXT_KINDS = new Set<DocumentKind>(['text', 'markdown', 'csv', 'json', 'xml', 'yaml', 'code']);

export const SUPPORTED_EXTENSIONS = Object.keys(BY_EXTENSION).sort();

/** A refusal names the format the content was recognised as, when it was (`detectedType`). */
export type Detection =
  { ok: true; type: DetectedType; sniffed: boolean } | { ok: false; reason: string; detectedType?: string };

const unsupportedContent = (mime: string): Detection => ({
  ok: false,
  reason: `content is ${mime}, which is not supported`,
  detectedType: mime,
});

/**
 * Decides a file's kind from its content first and its name second. A supported binary format
 * recognised by its magic bytes wins over the extension (a PNG named `.pdf` is an image); a recognised
 * unsupported one is refused under any binary name (a GIF named `.png`, a TIFF named `.pdf`) or none; a
 * text extension is trusted when the bytes look like text, since text formats have no signature. A
 * name without an extension leaves it to the part's declared type, and then to the content: text that
 * looks like text is read as plain text.
 */
export async function detectFileType(
  filename: string,
  content: Buffer,
  declaredType?: string,
): Promise<Detection> {
  const extension = extname(filename).toLowerCase();
  const byName =
    BY_EXTENSION[extension] ?? (extension === '' ? byDeclaredType(declaredType, content) : undefined);
  const magic = content.length > 0 ? await fileTypeFromBuffer(content) : undefined;
  const byContent = magic ? BY_MAGIC[magic.mime] : undefined;
  if (byContent) return { ok: true, type: byContent, sniffed: byName?.kind !== byContent.kind };
  if (!byName) {
    if (magic) return unsupportedContent(magic.mime);
    return { ok: false, reason: `extension "${extname(filename) || '(none)'}" is not supported` };
  }
  if (TEXT_KINDS.has(byName.kind)) {
    // Judged by how the bytes look, not by a signature: sniffers take some text for binary formats
    // (UTF-16 text for MPEG audio). Binary content of an unsupported format (a GIF named .txt) fails.
    if (looksLikeText(content)) return { ok: true, type: byName, sniffed: false };
    return {
      ok: false,
      reason: `content is ${magic?.mime ?? 'binary data'}, not text`,
      detectedType: magic?.mime,
    };
  }
  // Otherwise the extractor of the name would be given another format: OCR reads a GIF named .png as
  // if it were supported, and the PDF reader calls a TIFF named .pdf a broken PDF.
  if (magic && !SAME_FORMAT[byName.kind]?.has(magic.mime)) return unsupportedContent(magic.mime);
  // A supported binary format without its signature goes to its extractor, which reports the precise
  // problem (corrupt, truncated, encrypted).
  return { ok: true, type: byName, sniffed: false };
}

/** The kind a name without an extension gets: its declared text format, else plain text if it looks it. */
function byDeclaredType(declaredType: string | undefined, content: Buffer): DetectedType | undefined {
  const mediaType = declaredType?.split(';')[0].trim().toLowerCase() ?? '';
  return BY_DECLARED_TYPE[mediaType] ?? (looksLikeText(content) ? BY_EXTENSION['.txt'] : undefined);
}
