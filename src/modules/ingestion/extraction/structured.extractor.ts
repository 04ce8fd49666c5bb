import type { ExtractedText } from 'src/common/text/extracted-text.js';
import { isVisibleText } from 'src/common/validation/json-value.js';
import { parse as parseCsv } from 'csv-parse/sync';
import { sniffDelimiter } from 'src/modules/ingestion/extraction/csv-dialect.js';
import { XMLParser } from 'fast-xml-parser';
import {
  defineMappingTag,
  defineScalarTag,
  defineSequenceTag,
  FAILSAFE_SCHEMA,
  loadAll,
  mapTag,
  mergeTag,
  nullCoreTag,
  seqTag,
  YAMLException,
} from 'js-yaml';
import { referencedCharacter } from 'src/common/text/text-decoding.js';
import { IngestionErrors } from 'src/modules/ingestion/ingestion.errors.js';

/**
 * How deeply a data file may nest objects and arrays: far beyond real data, and beyond anything the
 * XML parser accepts (its 100 nested tags make at most about 200 levels). Deeper files are refused, not
 * flattened: every line repeats its whole path, so the text would grow with the square of the depth
 * (a 300 KB file could make hundreds of megabytes), and the recursion would overflow the stack.
 */
export const MAX_DATA_DEPTH = 256;

/** How deeply XML elements may nest, counting the root: its parser's default, 100. */
export const MAX_XML_NESTED_TAGS = 100;

const tooDeep = (kind: string) =>
  IngestionErrors.invalidDocument(kind, `it nests more than ${MAX_DATA_DEPTH} levels deep`);

/**
 * The most text a data file may flatten to. Keys repeat on every line below them, so a small file with
 * long keys can flatten to more text than a JavaScript string holds (a 120 KB file with one 100 KB key
 * over 10,000 values would make a gigabyte); such a file fails at once as unreadable rather than throw
 * `RangeError` on every retry.
 */
export const MAX_FLATTENED_CHARACTERS = 32 * 1024 * 1024;

/**
 * The most values (scalars, arrays and objects) a data file may hold, all its documents together. A
 * 10 MB file holds at most about 5,000,000 (`[0,0,...]`); only YAML's aliases can make more, repeating
 * what they name wherever they stand: nine levels of ten aliases make a billion values out of ten
 * lines, which would take the extraction thread minutes to walk even when every value is empty (and so
 * adds no characters).
 */
export const MAX_DATA_VALUES = 10_000_000;

/**
 * Data files become one line per value, `path.to.key: value`, so that keys and headers stay next to
 * the values they describe, both for keyword matching and for the embedding model. `documents` are
 * the file's documents (a YAML stream may hold several), flattened one after the other within the
 * limits of one file.
 */
export function flatten(documents: readonly unknown[], kind: string): string[] {
  const lines: string[] = [];
  let characters = 0;
  let values = 0;
  const walk = (value: unknown, path: string, depth: number): void => {
    if (++values > MAX_DATA_VALUES) {
      throw IngestionErrors.invalidDocument(
        kind,
        `it holds more than ${MAX_DATA_VALUES.toLocaleString('en')} values (with its aliases expanded)`,
      );
    }
    if (value !== null && typeof value === 'object' && depth === MAX_DATA_DEPTH) throw tooDeep(kind);
    if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, `${path}[${i}]`, depth + 1));
    } else if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) walk(child, path ? `${path}.${key}` : key, depth + 1);
    } else if (
      typeof value === 'string' ||
      typeof value === 'number' ||
      typeof value === 'boolean' ||
      typeof value === 'bigint'
    ) {
      const text = String(value).trim();
      // A value with nothing to read is no content, and its key alone is none either.
      if (!isVisibleText(text)) return;
      const line = path ? `${path}: ${text}` : text;
      characters += line.length + 1;
      if (characters > MAX_FLATTENED_CHARACTERS) {
        throw IngestionErrors.invalidDocument(
          kind,
          `flattened to one line per value it would be over ${MAX_FLATTENED_CHARACTERS / (1024 * 1024)}M characters`,
        );
      }
      lines.push(line);
    }
  };
  for (const document of documents) walk(document, '', 0);
  return lines;
}

export function extractJson(text: string): ExtractedText {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw IngestionErrors.invalidDocument('JSON', (error as Error).message);
  }
  return { format: 'records', sections: [{ text: flatten([data], 'JSON').join('\n') }] };
}

/** A mapping's key that is itself a sequence or mapping (`? [a, b]`), as text: `["a","b"]`. */
function keyText(key: unknown): unknown {
  if (key === null || typeof key !== 'object') return key;
  try {
    return JSON.stringify(key);
  } catch {
    return '[circular]'; // it holds an alias of itself
  }
}

/** Mappings as plain objects, as js-yaml's own, with complex keys as text instead of refused. */
const MAPPING = {
  ...mapTag,
  addPair: (mapping: Record<string, unknown>, key: unknown, value: unknown) =>
    mapTag.addPair(mapping, keyText(key), value),
  has: (mapping: Record<string, unknown>, key: unknown) => mapTag.has(mapping, keyText(key)),
  identify: () => false,
};

/**
 * What YAML a file may hold is read as written: scalars stay text (`02134`, `3.10`, `yes`, `1e3` and
 * dates as in the file, and `3.1` and `3.10` two keys, not one), but for null (`~`, `null`, nothing),
 * which has no text to index. Merge keys (`<<: *defaults`, common in CI and compose files) are merged.
 * Any other tag is read as what it tags (`!Ref name` is the text `name`, `!!binary` its base64 text,
 * a tagged mapping a mapping): a file's own tags mean nothing to the index, and refusing them would
 * refuse most CloudFormation templates.
 */
const YAML_SCHEMA = FAILSAFE_SCHEMA.withTags(
  nullCoreTag,
  mergeTag,
  defineMappingTag('tag:yaml.org,2002:map', MAPPING),
  // Matched by the prefix '', any tag name the schema does not hold exactly.
  defineScalarTag('', { matchByTagPrefix: true, resolve: (source) => source, identify: () => false }),
  defineSequenceTag('', { ...seqTag, matchByTagPrefix: true, identify: () => false }),
  defineMappingTag('', { ...MAPPING, matchByTagPrefix: true }),
);

/**
 * Merge keys copy what they name into each mapping that merges it, so their work can grow with the
 * square of a file's size: a file may merge this many keys in all (js-yaml's default, 10,000, would
 * refuse a CI file of 600 jobs that each merge 20 defaults).
 */
export const MAX_YAML_MERGED_KEYS = 1_000_000;

export function extractYaml(text: string): ExtractedText {
  let documents: unknown[];
  try {
    documents = loadAll(text, {
      schema: YAML_SCHEMA,
      maxTotalMergeKeys: MAX_YAML_MERGED_KEYS,
      // The parser stops deeper files before building them. Its count takes in the document, and in
      // some shapes the scalar at the bottom: so every file of 256 levels passes, and one of 257 is
      // refused here or by flatten, with the same reason.
      maxDepth: MAX_DATA_DEPTH + 2,
    });
  } catch (error) {
    if (!(error instanceof YAMLException)) throw error;
    if (error.reason.startsWith('nesting exceeded maxDepth')) throw tooDeep('YAML');
    const where = error.mark ? ` at line ${error.mark.line + 1}, column ${error.mark.column + 1}` : '';
    throw IngestionErrors.invalidDocument('YAML', `${error.reason}${where}`);
  }
  return { format: 'records', sections: [{ text: flatten(documents, 'YAML').join('\n') }] };
}

const XML_NAMED_ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/**
 * XML's own five entities and character references (`&amp;`, `&#233;`, `&#xE9;`) as the characters
 * they stand for, so that `Fish &amp; Chips` is not indexed with a word "amp". Entities a DOCTYPE
 * declares are left as written: expanding them is how an entity bomb works. A reference to no
 * character stays as written. CDATA goes through the same (the parser does not tell it apart), where
 * an `&amp;` is literal text: rare, and no worse to read decoded.
 */
function decodeXmlEntities(value: string): string {
  if (!value.includes('&')) return value;
  return value.replace(
    /&(?:#(\d{1,7})|#x([0-9a-fA-F]{1,6})|(lt|gt|amp|quot|apos));/g,
    (entity, dec, hex, name) => {
      if (name) return XML_NAMED_ENTITIES[name as string];
      const codePoint = dec ? Number(dec) : parseInt(hex as string, 16);
      return referencedCharacter(codePoint) ?? entity;
    },
  );
}

/** fast-xml-parser's ordered form: an element `{ name: children, ':@': attributes }`, or `{ '#text': text }`. */
type XmlNode = Record<string, unknown> & { ':@'?: Record<string, string> };

/** An element's name in the ordered form. */
const elementName = (node: XmlNode) => Object.keys(node).find((key) => key !== ':@');

/**
 * An element's children as a value to flatten: a string when it holds only text; else an object of its
 * child elements (repeated names as arrays), its `#text` and its `@attributes`. The `#text` of mixed
 * content (`<p>Alpha <b>bravo</b> charlie</p>`) is its text in order with the text of its children that
 * hold only text, words kept apart: fast-xml-parser's object form joins the text around child elements
 * with nothing between (`Alphacharlie`). Deeper descendants' text is not repeated, so that no text is
 * copied more than once more, however deep the nesting.
 */
function xmlValue(children: XmlNode[], attributes: Record<string, string> | undefined): unknown {
  // No prototype: an element may be named `isPrototypeOf` or `toLocaleString`.
  const elements: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  const inOrder: string[] = [];
  let ownText = '';
  let hasElements = false;
  for (const node of children) {
    if ('#text' in node) {
      ownText += String(node['#text']);
      inOrder.push(String(node['#text']));
      continue;
    }
    const name = elementName(node);
    if (!name) continue;
    hasElements = true;
    const value = xmlValue(node[name] as XmlNode[], node[':@']);
    if (typeof value === 'string') inOrder.push(value);
    const previous = elements[name];
    if (previous === undefined) elements[name] = value;
    else if (Array.isArray(previous)) previous.push(value);
    else elements[name] = [previous, value];
  }
  const text = hasElements && ownText.trim() ? inOrder.filter((part) => part.trim()).join(' ') : ownText;
  if (!hasElements && !attributes) return text;
  return { ...elements, ...(text.trim() ? { '#text': text } : {}), ...attributes };
}

export function extractXml(text: string): ExtractedText {
  // The declaration may name an encoding the bytes are not in; the text has been decoded already.
  const withoutDeclaration = text.replace(/^\s*<\?xml[^>]*\?>/, '');
  let nodes: XmlNode[];
  try {
    // XML has no numbers: a value is indexed as written (`02134`, `3.10`), as attributes already were.
    nodes = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '@',
      processEntities: false,
      parseTagValue: false,
      preserveOrder: true,
      // The parser's limit counts the elements inside the root: 100 let a root hold 101 levels.
      maxNestedTags: MAX_XML_NESTED_TAGS - 1,
      tagValueProcessor: (_name: string, value: string) => decodeXmlEntities(value),
      attributeValueProcessor: (_name: string, value: string) => decodeXmlEntities(value),
    }).parse(withoutDeclaration, true) as XmlNode[];
  } catch (error) {
    throw IngestionErrors.invalidDocument('XML', (error as Error).message);
  }
  const data = xmlValue(nodes, undefined);
  return { format: 'records', sections: [{ text: flatten([data], 'XML').join('\n') }] };
}

/** Each row as `header: value | header: value`; a file without a header row keeps its rows as they are. */
export function extractCsv(text: string): ExtractedText {
  let rows: string[][];
  try {
    rows = parseCsv(text, {
      delimiter: sniffDelimiter(text),
      relax_column_count: true,
      relax_quotes: true,
      skip_empty_lines: true,
      bom: true,
    });
  } catch (error) {
    throw IngestionErrors.invalidDocument('CSV', (error as Error).message);
  }
  if (rows.length === 0) return { format: 'records', sections: [] };
  const [header, ...body] = rows;
  // Cells with nothing to read are left out, with their headers: a CSV of blank cells has no text.
  const lines =
    body.length === 0
      ? [header.filter(isVisibleText).join(' | ')]
      : body.map((row) =>
          row
            .flatMap((cell, i) => (isVisibleText(cell) ? [header[i] ? `${header[i]}: ${cell}` : cell] : []))
            .join(' | '),
        );
  return { format: 'records', sections: [{ text: lines.filter((line) => line !== '').join('\n') }] };
}
