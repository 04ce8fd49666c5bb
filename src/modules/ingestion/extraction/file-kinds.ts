import { extname } from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import { looksLikeText } from 'src/modules/ingestion/extraction/text-decoding.js';

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

/** Binary formats recognised by their content, whatever the file is called. */
const BY_MAGIC: Record<string, DetectedType> = {
  'application/pdf': BY_EXTENSION['.pdf'],
  'image/png': BY_EXTENSION['.png'],
  'image/jpeg': BY_EXTENSION['.jpg'],
  [BY_EXTENSION['.docx'].mediaType]: BY_EXTENSION['.docx'],
  [BY_EXTENSION['.pptx'].mediaType]: BY_EXTENSION['.pptx'],
};

const TEXT_KINDS = new Set<DocumentKind>(['text', 'markdown', 'csv', 'json', 'xml', 'yaml', 'code']);

export const SUPPORTED_EXTENSIONS = Object.keys(BY_EXTENSION).sort();

export type Detection = { ok: true; type: DetectedType; sniffed: boolean } | { ok: false; reason: string };

/**
 * Decides a file's kind from its content first and its name second. A binary format recognised by
 * its magic bytes wins over the extension (a PNG named `.pdf` is an image); a name with a supported
 * extension is trusted for text formats, whose content has no signature; anything else is refused.
 */
export async function detectFileType(filename: string, content: Buffer): Promise<Detection> {
  const byName = BY_EXTENSION[extname(filename).toLowerCase()];
  const magic = content.length > 0 ? await fileTypeFromBuffer(content) : undefined;
  const byContent = magic ? BY_MAGIC[magic.mime] : undefined;
  if (byContent) return { ok: true, type: byContent, sniffed: byName?.kind !== byContent.kind };
  if (!byName) {
    if (magic) return { ok: false, reason: `content is ${magic.mime}, which is not supported` };
    return { ok: false, reason: `extension "${extname(filename) || '(none)'}" is not supported` };
  }
  // A text name on binary content of an unsupported format (a GIF named .txt) is refused.
  if (TEXT_KINDS.has(byName.kind) && !looksLikeText(content)) {
    return { ok: false, reason: `content is ${magic?.mime ?? 'binary data'}, not text` };
  }
  // A supported binary format (pdf, docx, pptx, image) without its signature goes to its extractor,
  // which reports the precise problem (corrupt, truncated, encrypted).
  return { ok: true, type: byName, sniffed: false };
}
