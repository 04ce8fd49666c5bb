/** A document's own title: its metadata's `title`, else its filename; null when it has neither. */
export function documentTitle(metadata: Record<string, unknown>, filename: string | null): string | null {
  const title = metadata.title;
  if (typeof title === 'string' && title.trim() !== '') return title;
  return filename;
}

/**
 * The title a document's chunks are indexed with: its metadata's `title`, else its filename read as
 * words (`kestrel-guide_v2.md` → `kestrel guide v2`): the text search parser takes a name with an
 * extension as one token, which no query word would match.
 */
export function indexedTitle(metadata: Record<string, unknown>, filename: string | null): string | null {
  const title = documentTitle(metadata, null);
  if (title !== null || filename === null) return title;
  return filename.replace(/\.[^.\s]{1,10}$/, '').replace(/[-_.]+/g, ' ');
}

/** Characters of a title, and of each heading, that are indexed with a chunk (a title can be a paragraph). */
const CONTEXT_PART_CHARS = 200;

/**
 * How many times the title is indexed with each chunk: a field weight, as search engines weigh titles
 * above body text. Measured on SciFact, twice beats once (docs/search.md, "Chunks and their context").
 */
const TITLE_WEIGHT = 2;

/**
 * What a chunk is indexed with besides its content, for the keyword leg: its document's title and the
 * headings of the sections it starts in (`headingPaths`). A passage cut from the middle of a paper
 * rarely names its subject; the title and headings do, and the content returned stays as written.
 * Null when there is neither.
 */
export function indexContext(title: string | null, headings: string[]): string | null {
  const given = (part: string | null): part is string => part !== null && part.trim() !== '';
  const parts = [...new Array<string | null>(TITLE_WEIGHT).fill(title), ...headings].filter(given);
  return parts.length === 0 ? null : parts.map((part) => part.slice(0, CONTEXT_PART_CHARS)).join('\n');
}
