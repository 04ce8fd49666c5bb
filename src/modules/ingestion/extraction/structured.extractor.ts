import { parse as parseCsv } from 'csv-parse/sync';
import { XMLParser } from 'fast-xml-parser';
import {
  CORE_SCHEMA,
  defineMappingTag,
  defineScalarTag,
  defineSequenceTag,
  loadAll,
  mapTag,
  mergeTag,
  seqTag,
  YAMLException,
} from 'js-yaml';
import type { ExtractedText } from 'src/modules/ingestion/extraction/extracted-text.js';
import { IngestionErrors } from 'src/modules/ingestion/ingestion.errors.js';

/**
 * How deeply a data file may nest objects and arrays: far beyond real data, and beyond anything the
 * XML parser accepts (its 100 nested tags make at most about 200 levels). Deeper files are refused, not
 * flattened: every line repeats its whole path, so the text would grow with the square of the depth
 * (a 300 KB file could make hundreds of megabytes), and the recursion would overflow the stack.
 */
export const MAX_DATA_DEPTH = 256;

/**
 * The most text a data file may flatten to. Keys repeat on every line below them, so a small file with
 * long keys can flatten to more text than a JavaScript string holds (a 120 KB file with one 100 KB key
 * over 10,000 values would make a gigabyte); such a file fails at once as unreadable rather than throw
 * `RangeError` on every retry.
 */
export const MAX_FLATTENED_CHARACTERS = 32 * 1024 * 1024;

/**
 * The most values (scalars, arrays and objects) a data file may hold. A 10 MB file holds at most about
 * 5,000,000 (`[0,0,...]`); only YAML's aliases can make more, repeating what they name wherever they
 * stand: nine levels of ten aliases make a billion values out of ten lines, which would take the
 * extraction thread minutes to walk even when every value is empty (and so adds no characters).
 */
export const MAX_DATA_VALUES = 10_000_000;

/**
 * Data files become one line per value, `path.to.key: value`, so that keys and headers stay next to
 * the values they describe, both for keyword matching and for the embedding model.
 */
export function flatten(value: unknown, kind: string): string[] {
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
    if (value !== null && typeof value === 'object' && depth === MAX_DATA_DEPTH) {
      throw IngestionErrors.invalidDocument(kind, `it nests more than ${MAX_DATA_DEPTH} levels deep`);
    }
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
      if (text === '') return;
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
  walk(value, '', 0);
  return lines;
}

export function extractJson(text: string): ExtractedText {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw IngestionErrors.invalidDocument('JSON', (error as Error).message);
  }
  return { format: 'records', sections: [{ text: flatten(data, 'JSON').join('\n') }] };
}

/**
 * YAML 1.2's core schema (`yes` stays text, timestamps stay as written), with merge keys (`<<: *base`,
 * common in CI and compose files) and any other tag read as what it tags: `!Ref name` is the text
 * `name`, `!!binary` its base64 text, a tagged mapping a mapping. A file's own tags mean nothing to the
 * index, and refusing them would refuse most CloudFormation templates.
 */
const YAML_SCHEMA = CORE_SCHEMA.withTags(
  mergeTag,
  // Matched by the prefix '', every tag name: tags the schema knows (`!!int "7"`) still take precedence.
  defineScalarTag('', { matchByTagPrefix: true, resolve: (source) => source, identify: () => false }),
  defineSequenceTag('', { ...seqTag, matchByTagPrefix: true, identify: () => false }),
  defineMappingTag('', { ...mapTag, matchByTagPrefix: true, identify: () => false }),
);

export function extractYaml(text: string): ExtractedText {
  let documents: unknown[];
  try {
    // The parser stops deeper files before building them. It counts the document as a level, and a
    // flow collection (`[[...]]`) as one more: so 256 levels of either pass, and flatten refuses 257.
    documents = loadAll(text, { schema: YAML_SCHEMA, maxDepth: MAX_DATA_DEPTH + 2 });
  } catch (error) {
    if (!(error instanceof YAMLException)) throw error;
    const where = error.mark ? ` at line ${error.mark.line + 1}, column ${error.mark.column + 1}` : '';
    throw IngestionErrors.invalidDocument('YAML', `${error.reason}${where}`);
  }
  return { format: 'records', sections: [{ text: documents.flatMap((d) => flatten(d, 'YAML')).join('\n') }] };
}

export function extractXml(text: string): ExtractedText {
  // The declaration may name an encoding the bytes are not in; the text has been decoded already.
  const withoutDeclaration = text.replace(/^\s*<\?xml[^>]*\?>/, '');
  let data: unknown;
  try {
    data = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', processEntities: false }).parse(
      withoutDeclaration,
      true,
    );
  } catch (error) {
    throw IngestionErrors.invalidDocument('XML', (error as Error).message);
  }
  return { format: 'records', sections: [{ text: flatten(data, 'XML').join('\n') }] };
}

/** Each row as `header: value | header: value`; a file without a header row keeps its rows as they are. */
export function extractCsv(text: string): ExtractedText {
  let rows: string[][];
  try {
    rows = parseCsv(text, {
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
  const lines =
    body.length === 0
      ? [header.join(' | ')]
      : body.map((row) =>
          row
            .map((cell, i) => (header[i] ? `${header[i]}: ${cell}` : cell))
            .filter((cell) => cell.trim() !== '')
            .join(' | '),
        );
  return { format: 'records', sections: [{ text: lines.join('\n') }] };
}
