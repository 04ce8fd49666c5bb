import type { Readable } from 'node:stream';
import { XMLValidator } from 'fast-xml-parser';
import JSZip from 'jszip';
import mammoth from 'mammoth';
import type * as PdfParseModule from 'pdf-parse';
import type { ExtractedText, TextSection } from 'src/common/text/extracted-text.js';
import { decodeText, referencedCharacter } from 'src/common/text/text-decoding.js';
import { IngestionErrors } from 'src/modules/ingestion/ingestion.errors.js';

/**
 * pdf-parse, loaded with the first PDF rather than with this module: the pdf.js build it bundles
 * installs core-js polyfills over JavaScript's own builtins (`JSON.parse`, `Array.prototype.push`
 * and more) for the whole thread that loads it. Extraction runs in threads of its own
 * (`ExtractionService`), so the API's requests never meet them; loaded lazily, they do not slow the
 * data files an extraction thread reads before its first PDF either.
 */
let pdfParse: Promise<typeof PdfParseModule> | undefined;

/** Text per page; an encrypted, truncated or non-PDF file fails with invalid_pdf. */
export async function extractPdf(bytes: Buffer): Promise<ExtractedText> {
  const { PDFParse } = await (pdfParse ??= import('pdf-parse'));
  const parser = new PDFParse({ data: new Uint8Array(bytes) });
  try {
    const result = await parser.getText();
    return { format: 'prose', sections: result.pages.map((page) => ({ text: page.text, page: page.num })) };
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'PasswordException') throw IngestionErrors.encryptedPdf();
    throw IngestionErrors.invalidPdf((error as Error).message);
  } finally {
    await parser.destroy();
  }
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (match, entity: string) => {
    if (entity[0] === '#') {
      const code =
        entity[1] === 'x' || entity[1] === 'X' ? parseInt(entity.slice(2), 16) : Number(entity.slice(1));
      return referencedCharacter(code) ?? match; // one that names no character is kept as written
    }
    return ENTITIES[entity.toLowerCase()] ?? match;
  });
}

/** Tags removed, entities left: the whole text is decoded once, at the end of htmlToStructuredText. */
const stripTags = (html: string) => html.replace(/<[^>]+>/g, '');

/**
 * Mammoth's HTML turned into Markdown-like text: headings keep their `#` level and tables become rows
 * of `cell | cell`, so that the chunker can cut at headings and a row stays together.
 */
export function htmlToStructuredText(html: string): string {
  return decodeEntities(
    html
      .replace(/<table[^>]*>([\s\S]*?)<\/table>/g, (_m, table: string) => {
        const rows = [...table.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)].map((row) =>
          [...row[1].matchAll(/<t[dh][^>]*>([\s\S]*?)<\/t[dh]>/g)]
            .map((cell) => stripTags(cell[1]).trim())
            .join(' | '),
        );
        return `\n\n${rows.join('\n')}\n\n`;
      })
      .replace(/<h([1-6])[^>]*>([\s\S]*?)<\/h\1>/g, (_m, level: string, text: string) => {
        return `\n\n${'#'.repeat(Number(level))} ${text.replace(/<[^>]+>/g, '')}\n\n`;
      })
      .replace(/<li[^>]*>/g, '\n- ')
      .replace(/<\/(p|ul|ol|li)>/g, '\n\n')
      .replace(/<br\s*\/?>/g, '\n')
      .replace(/<[^>]+>/g, ''),
  )
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Office files are ZIP archives; a 10 MB file that unpacks to gigabytes (a zip bomb) is refused. */
const MAX_UNZIPPED_BYTES = 200 * 1024 * 1024;

/**
 * Opens the archive and inflates every entry once as a stream, counting what it really holds: the
 * sizes an archive declares can lie, and deflate packs 1,000 bytes into one, so a 10 MB upload could
 * otherwise unpack to 10 GB of memory outside the extraction thread's heap limit. The count stops at
 * the limit; the parsers then read an archive known to be small.
 */
export async function openZip(bytes: Buffer, kind: string, maxBytes = MAX_UNZIPPED_BYTES): Promise<JSZip> {
  let zip: JSZip;
  try {
    zip = await JSZip.loadAsync(bytes);
  } catch (error) {
    throw IngestionErrors.invalidDocument(kind, (error as Error).message);
  }
  let unpacked = 0;
  for (const file of Object.values(zip.files)) {
    if (file.dir) continue;
    await new Promise<void>((resolve, reject) => {
      const stream = file.nodeStream('nodebuffer') as Readable;
      stream
        .on('data', (chunk: Buffer) => {
          unpacked += chunk.length;
          if (unpacked <= maxBytes) return;
          stream.destroy(); // stops the inflating too: it pauses when the stream takes no more
          reject(IngestionErrors.invalidDocument(kind, `it unpacks to more than ${maxBytes} bytes`));
        })
        .on('error', (error: Error) => reject(IngestionErrors.invalidDocument(kind, error.message)))
        .on('end', () => resolve());
    });
  }
  return zip;
}

export async function extractDocx(bytes: Buffer): Promise<ExtractedText> {
  await openZip(bytes, 'DOCX');
  let html: string;
  try {
    html = (await mammoth.convertToHtml({ buffer: bytes })).value;
  } catch (error) {
    throw IngestionErrors.invalidDocument('DOCX', (error as Error).message);
  }
  return { format: 'markdown', sections: [{ text: htmlToStructuredText(html) }] };
}

/** The text of each `<a:p>` paragraph of a DrawingML part, one line each. */
export function drawingText(xml: string): string {
  return [...xml.matchAll(/<a:p\b[^>]*>([\s\S]*?)<\/a:p>/g)]
    .map((paragraph) =>
      // `<a:t/>` is an empty run, not the opening of one: it must not reach the next run's `</a:t>`.
      [...paragraph[1].matchAll(/<a:t(?:\s[^>]*?)?(?:\/>|>([\s\S]*?)<\/a:t>)/g)]
        .map((run) => run[1] ?? '')
        .join(''),
    )
    .map((line) => decodeEntities(line).trim())
    .filter((line) => line.length > 0)
    .join('\n');
}

/** `Target` of the relationship with the given id, resolved against the folder of the part. */
function relationshipTargets(relsXml: string): Map<string, { target: string; type: string }> {
  const targets = new Map<string, { target: string; type: string }>();
  for (const match of relsXml.matchAll(/<Relationship\b([^>]*)\/?>/g)) {
    const attr = (name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(match[1])?.[1];
    const id = attr('Id');
    const target = attr('Target');
    if (id && target) targets.set(id, { target, type: attr('Type') ?? '' });
  }
  return targets;
}

function resolvePart(base: string, target: string): string {
  if (target.startsWith('/')) return target.slice(1);
  const parts = base.split('/').slice(0, -1);
  for (const segment of target.split('/')) {
    if (segment === '..') parts.pop();
    else if (segment !== '.') parts.push(segment);
  }
  return parts.join('/');
}

/** The slides in presentation order (the order of `p:sldIdLst`), else by their file number. */
async function slidePaths(zip: JSZip): Promise<string[]> {
  const presentation = await zip.file('ppt/presentation.xml')?.async('string');
  const rels = await zip.file('ppt/_rels/presentation.xml.rels')?.async('string');
  if (presentation && rels) {
    const targets = relationshipTargets(rels);
    const ordered = [...presentation.matchAll(/<p:sldId\b[^>]*\br:id="([^"]+)"/g)]
      .map((m) => targets.get(m[1]))
      .filter((t): t is { target: string; type: string } => t !== undefined)
      .map((t) => resolvePart('ppt/presentation.xml', t.target))
      .filter((path) => zip.file(path) !== null);
    if (ordered.length > 0) return ordered;
  }
  const number = (path: string) => Number(/slide(\d+)\.xml$/.exec(path)?.[1] ?? 0);
  return Object.keys(zip.files)
    .filter((path) => /^ppt\/slides\/slide\d+\.xml$/.test(path))
    .sort((a, b) => number(a) - number(b));
}

/**
 * A part of the archive as XML text, decoded by its byte order mark (a package may hold UTF-16 parts),
 * refused when it is not well-formed: slides are read with patterns, which would find no text in a
 * corrupt slide and let the file pass with that slide missing.
 */
async function xmlPart(zip: JSZip, path: string): Promise<string> {
  const bytes = await zip.file(path)?.async('nodebuffer');
  const xml = bytes ? decodeText(bytes).text : '';
  const verdict = XMLValidator.validate(xml);
  if (verdict !== true) {
    const { msg, line } = verdict.err;
    throw IngestionErrors.invalidDocument('PPTX', `${path} is not well-formed XML (line ${line}: ${msg})`);
  }
  return xml;
}

/** Slide text and speaker notes, slide by slide, in presentation order; each slide is a section. */
export async function extractPptx(bytes: Buffer): Promise<ExtractedText> {
  const zip = await openZip(bytes, 'PPTX');
  const sections: TextSection[] = [];
  const paths = await slidePaths(zip);
  for (const [index, path] of paths.entries()) {
    const slide = await xmlPart(zip, path);
    const relsPath = path.replace(/slides\/(slide\d+\.xml)$/, 'slides/_rels/$1.rels');
    const rels = relationshipTargets((await zip.file(relsPath)?.async('string')) ?? '');
    const notesTarget = [...rels.values()].find((r) => r.type.endsWith('/notesSlide'));
    const notesPath = notesTarget && resolvePart(path, notesTarget.target);
    const notes = notesPath && zip.file(notesPath) ? await xmlPart(zip, notesPath) : undefined;
    const text = [drawingText(slide), notes ? drawingText(notes) : ''].filter((part) => part).join('\n\n');
    sections.push({ text, page: index + 1 });
  }
  if (paths.length === 0) throw IngestionErrors.invalidDocument('PPTX', 'it contains no slides');
  return { format: 'prose', sections };
}
