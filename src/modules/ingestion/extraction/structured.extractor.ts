import { parse as parseCsv } from 'csv-parse/sync';
import { XMLParser } from 'fast-xml-parser';
import { parseAllDocuments } from 'yaml';
import type { ExtractedText } from 'src/modules/ingestion/extraction/extracted-text.js';
import { IngestionErrors } from 'src/modules/ingestion/ingestion.errors.js';

/**
 * Data files become one line per value, `path.to.key: value`, so that keys and headers stay next to
 * the values they describe, both for keyword matching and for the embedding model.
 */
export function flatten(value: unknown, path = '', lines: string[] = []): string[] {
  if (Array.isArray(value)) {
    value.forEach((item, i) => flatten(item, `${path}[${i}]`, lines));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) flatten(child, path ? `${path}.${key}` : key, lines);
  } else if (
    typeof value === 'string' ||
    typeof value === 'number' ||
    typeof value === 'boolean' ||
    typeof value === 'bigint'
  ) {
    const text = String(value).trim();
    if (text !== '') lines.push(path ? `${path}: ${text}` : text);
  }
  return lines;
}

export function extractJson(text: string): ExtractedText {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw IngestionErrors.invalidDocument('JSON', (error as Error).message);
  }
  return { format: 'records', sections: [{ text: flatten(data).join('\n') }] };
}

export function extractYaml(text: string): ExtractedText {
  let documents: unknown[];
  try {
    documents = parseAllDocuments(text).map((document) => {
      if (document.errors.length > 0) throw document.errors[0];
      return document.toJS({ maxAliasCount: 100 }) as unknown;
    });
  } catch (error) {
    throw IngestionErrors.invalidDocument('YAML', (error as Error).message);
  }
  return { format: 'records', sections: [{ text: documents.flatMap((d) => flatten(d)).join('\n') }] };
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
  return { format: 'records', sections: [{ text: flatten(data).join('\n') }] };
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
