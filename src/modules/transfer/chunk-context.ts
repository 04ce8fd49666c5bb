import { indexContext, indexedTitle } from 'src/modules/chunk-index/document-context.js';
import { headingPaths } from 'src/modules/embeddings/chunking/chunker.js';

/** The kinds whose extracted text is Markdown, whose headings a chunk is indexed with. */
const MARKDOWN_KINDS: ReadonlySet<string> = new Set(['markdown', 'docx']);

/** A document as its chunks' context is made from it. */
export interface ContextSource {
  kind: string;
  filename: string | null;
  metadata: Record<string, unknown>;
}

/** Whether the document's chunks carry headings, which need its whole text to be found. */
export function needsText(document: ContextSource): boolean {
  return MARKDOWN_KINDS.has(document.kind);
}

/**
 * The context each chunk of a document is indexed with (`indexContext`: the title, and for Markdown
 * the headings of the sections it starts in), made again as indexing made it, since it is not stored.
 * The text is rebuilt from the chunks, offset for offset, with a line break wherever no chunk reaches
 * (the chunker leaves out only blank space), so that every heading line starts where it did.
 * `spans`: every chunk of the document in order, or none for a kind without headings.
 */
export function chunkContexts(
  document: ContextSource,
  spans: readonly { content: string; charStart: number }[],
): (ordinal: number) => string | null {
  const title = indexedTitle(document.metadata, document.filename);
  if (!needsText(document) || spans.length === 0) {
    const context = indexContext(title, []);
    return () => context;
  }
  let text = '';
  for (const { content, charStart } of spans) {
    if (charStart > text.length) text += '\n'.repeat(charStart - text.length);
    text += content.slice(text.length - charStart);
  }
  const paths = headingPaths({ format: 'markdown', sections: [{ text }] }, [...spans]);
  return (ordinal) => indexContext(title, paths[ordinal] ?? []);
}
