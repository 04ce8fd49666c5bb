import { isUtf8 } from 'node:buffer';
import { isPlainObject } from 'src/common/validation/metadata.js';
import { ARCHIVE_FORMAT, ARCHIVE_VERSION } from 'src/modules/transfer/archive-version.js';
import type { ArchivePlace } from 'src/modules/transfer/transfer.errors.js';
import { TransferErrors } from 'src/modules/transfer/transfer.errors.js';

/**
 * A dataset archive (docs/export-format.md): gzip of NDJSON, one record a line, in this order: the
 * manifest, the dataset, then each document followed by its chunks, then `end`. Every record is
 * bounded by the upload limits, so that a reader holds one record at a time whatever the dataset.
 */
export { ARCHIVE_FORMAT, ARCHIVE_VERSION };
export const ARCHIVE_MEDIA_TYPE = 'application/gzip';

/** A record's bytes at most: the largest file (10 MB, 13.4 MB as base64) with its metadata. */
export const ARCHIVE_RECORD_BYTES = 16 * 1024 * 1024;
/** A chunk's content at most, in UTF-16 code units: far above the chunker's 5,120 characters. */
export const ARCHIVE_CHUNK_CHARACTERS = 100_000;
/** The most dimensions a vector may have: pgvector's HNSW limit for halfvec. */
export const ARCHIVE_MAX_DIMENSIONS = 4_000;

export interface EmbeddingModelRecord {
  model: string;
  dimensions: number;
}

export interface ManifestRecord {
  type: 'manifest';
  format: typeof ARCHIVE_FORMAT;
  version: typeof ARCHIVE_VERSION;
  exported_at: string;
  source: { dataset_id: string };
  /** The model and dimension of the chunks' vectors; null when the dataset has none. */
  embedding: EmbeddingModelRecord | null;
  /** What the archive holds, as read in the export's snapshot (checked again against `end`). */
  counts: { documents: number; chunks: number };
}

export interface FusionRecord {
  keyword_weight: number;
  semantic_weight: number;
  embedding_model: string;
  chunk_count: number;
  pseudo_queries: number;
  evidence: { keyword: number; semantic: number; hybrid: Record<string, number> };
}

export interface DatasetRecord {
  type: 'dataset';
  name: string;
  description: string | null;
  is_public: boolean;
  metadata: Record<string, unknown>;
  language: string;
  /** The hybrid weights the tuning chose, or null when none was chosen. */
  fusion: FusionRecord | null;
}

export type ArchivedStatus = 'ready' | 'failed' | 'processing';

export interface DocumentRecord {
  type: 'document';
  id: string;
  filename: string | null;
  kind: string;
  media_type: string;
  /** The original bytes' length and SHA-256 (hex): `content_base64` must decode to exactly these. */
  size_bytes: number;
  sha256: string;
  metadata: Record<string, unknown>;
  status: ArchivedStatus;
  error: { code: string; message: string; details?: Record<string, unknown> } | null;
  /** How many chunk records follow it. */
  chunks: number;
  content_base64: string;
}

export interface ChunkRecord {
  type: 'chunk';
  document_id: string;
  ordinal: number;
  content: string;
  token_count: number;
  page: number | null;
  char_start: number;
  char_end: number;
  /** What the chunk is indexed with for the keyword leg besides its content (title, headings). */
  context: string | null;
  /** Big-endian float32 values (pgvector's binary order), base64; null for a chunk without a vector. */
  vector: string | null;
}

export interface EndRecord {
  type: 'end';
  documents: number;
  chunks: number;
}

export type ArchiveRecord = ManifestRecord | DatasetRecord | DocumentRecord | ChunkRecord | EndRecord;

/** A record as one line of the archive. */
export function recordLine(record: ArchiveRecord): Buffer {
  return Buffer.from(`${JSON.stringify(record)}\n`, 'utf8');
}

/** A vector as the archive carries it: its float32 bytes, big-endian, base64. */
export function encodeVector(values: readonly number[]): string {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((value, i) => bytes.writeFloatBE(value, i * 4));
  return bytes.toString('base64');
}

/** A vector read back, checked to have `dimensions` finite values. */
export function decodeVector(encoded: string, dimensions: number, place: ArchivePlace): number[] {
  const bytes = strictBase64(encoded, place, 'vector');
  if (bytes.length !== dimensions * 4) {
    throw TransferErrors.invalidVector(
      `${bytes.length / 4} dimensions where the archive's model has ${dimensions}`,
      place,
    );
  }
  const values = new Array<number>(dimensions);
  for (let i = 0; i < dimensions; i++) {
    const value = bytes.readFloatBE(i * 4);
    if (!Number.isFinite(value)) throw TransferErrors.invalidVector(`value ${i} is not finite`, place);
    values[i] = value;
  }
  return values;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Base64 decoded only when it is exactly that: Node.js would skip stray characters silently. */
export function strictBase64(encoded: string, place: ArchivePlace, field: string): Buffer {
  if (encoded.length % 4 !== 0 || !BASE64.test(encoded)) {
    throw TransferErrors.corrupt(`${field} is not base64`, place);
  }
  return Buffer.from(encoded, 'base64');
}

/** One line of the archive as a record of a known type with the fields it must have. */
export function parseRecord(bytes: Buffer, record: number): ArchiveRecord {
  const place = { record };
  if (!isUtf8(bytes)) throw TransferErrors.corrupt('a record is not UTF-8', place);
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw TransferErrors.corrupt(`a record is not JSON (${(error as Error).message})`, place);
  }
  if (!isPlainObject(value)) throw TransferErrors.corrupt('a record is not a JSON object', place);
  const fields = new Fields(value, place);
  switch (value.type) {
    case 'manifest':
      return manifest(value, fields, place);
    case 'dataset':
      return {
        type: 'dataset',
        name: fields.string('name'),
        description: fields.nullable('description', () => fields.string('description')),
        is_public: fields.boolean('is_public'),
        metadata: fields.object('metadata'),
        language: fields.string('language'),
        fusion: fields.nullable('fusion', () => fusion(fields.object('fusion'), place)),
      };
    case 'document':
      return document(fields);
    case 'chunk':
      return chunk(fields);
    case 'end':
      return { type: 'end', documents: fields.count('documents'), chunks: fields.count('chunks') };
    default:
      throw TransferErrors.corrupt(`a record of unknown type ${JSON.stringify(value.type ?? null)}`, place);
  }
}

function manifest(value: Record<string, unknown>, fields: Fields, place: ArchivePlace): ManifestRecord {
  if (value.format !== ARCHIVE_FORMAT || value.version !== ARCHIVE_VERSION) {
    throw TransferErrors.versionUnsupported(value.format, value.version, place);
  }
  const embedding = fields.nullable('embedding', () => {
    const model = new Fields(fields.object('embedding'), place);
    const dimensions = model.count('dimensions');
    if (dimensions < 1 || dimensions > ARCHIVE_MAX_DIMENSIONS) {
      throw TransferErrors.invalidVector(`${dimensions} dimensions`, place);
    }
    return { model: model.string('model'), dimensions };
  });
  const source = new Fields(fields.object('source'), place);
  const counts = new Fields(fields.object('counts'), place);
  return {
    type: 'manifest',
    format: ARCHIVE_FORMAT,
    version: ARCHIVE_VERSION,
    exported_at: fields.string('exported_at'),
    source: { dataset_id: source.string('dataset_id') },
    embedding,
    counts: { documents: counts.count('documents'), chunks: counts.count('chunks') },
  };
}

function fusion(value: Record<string, unknown>, place: ArchivePlace): FusionRecord {
  const fields = new Fields(value, place);
  const evidence = new Fields(fields.object('evidence'), place);
  const hybrid = evidence.object('hybrid');
  for (const [weight, figure] of Object.entries(hybrid)) {
    if (typeof figure !== 'number' || !Number.isFinite(figure)) {
      throw TransferErrors.corrupt(`fusion evidence at ${weight} is not a number`, place);
    }
  }
  return {
    keyword_weight: fields.number('keyword_weight'),
    semantic_weight: fields.number('semantic_weight'),
    embedding_model: fields.string('embedding_model'),
    chunk_count: fields.count('chunk_count'),
    pseudo_queries: fields.count('pseudo_queries'),
    evidence: {
      keyword: evidence.number('keyword'),
      semantic: evidence.number('semantic'),
      hybrid: hybrid as Record<string, number>,
    },
  };
}

const STATUSES: readonly string[] = ['ready', 'failed', 'processing'];

function document(fields: Fields): DocumentRecord {
  const status = fields.string('status');
  if (!STATUSES.includes(status)) throw fields.wrong('status', `one of ${STATUSES.join(', ')}`);
  const error = fields.nullable('error', () => {
    const error = new Fields(fields.object('error'), fields.place);
    return {
      code: error.string('code'),
      message: error.string('message'),
      details: error.optionalObject('details'),
    };
  });
  const sha256 = fields.string('sha256');
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw fields.wrong('sha256', 'a SHA-256 in lower-case hex');
  return {
    type: 'document',
    id: fields.string('id'),
    filename: fields.nullable('filename', () => fields.string('filename')),
    kind: fields.string('kind'),
    media_type: fields.string('media_type'),
    size_bytes: fields.count('size_bytes'),
    sha256,
    metadata: fields.object('metadata'),
    status: status as ArchivedStatus,
    error,
    chunks: fields.count('chunks'),
    content_base64: fields.string('content_base64'),
  };
}

function chunk(fields: Fields): ChunkRecord {
  const content = fields.string('content');
  if (content.length === 0 || content.length > ARCHIVE_CHUNK_CHARACTERS) {
    throw fields.wrong('content', `1-${ARCHIVE_CHUNK_CHARACTERS} characters`);
  }
  const charStart = fields.count('char_start');
  const charEnd = fields.count('char_end');
  if (charEnd < charStart) throw fields.wrong('char_end', 'at least char_start');
  return {
    type: 'chunk',
    document_id: fields.string('document_id'),
    ordinal: fields.count('ordinal'),
    content,
    token_count: fields.count('token_count'),
    page: fields.nullable('page', () => fields.count('page')),
    char_start: charStart,
    char_end: charEnd,
    context: fields.nullable('context', () => fields.string('context')),
    vector: fields.nullable('vector', () => fields.string('vector')),
  };
}

/** A record's fields read by type; a missing or mistyped one is `archive_corrupt`, naming it. */
class Fields {
  constructor(
    private readonly value: Record<string, unknown>,
    readonly place: ArchivePlace,
  ) {}

  wrong(field: string, expected: string): Error {
    return TransferErrors.corrupt(`${field} must be ${expected}`, { ...this.place, field });
  }

  string(field: string): string {
    const value = this.value[field];
    if (typeof value !== 'string') throw this.wrong(field, 'a string');
    return value;
  }

  number(field: string): number {
    const value = this.value[field];
    if (typeof value !== 'number' || !Number.isFinite(value)) throw this.wrong(field, 'a finite number');
    return value;
  }

  /** A whole number from 0 within PostgreSQL's integer. */
  count(field: string): number {
    const value = this.value[field];
    if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > 2_147_483_647) {
      throw this.wrong(field, 'a whole number from 0');
    }
    return value as number;
  }

  boolean(field: string): boolean {
    const value = this.value[field];
    if (typeof value !== 'boolean') throw this.wrong(field, 'a boolean');
    return value;
  }

  object(field: string): Record<string, unknown> {
    const value = this.value[field];
    if (!isPlainObject(value)) throw this.wrong(field, 'an object');
    return value;
  }

  optionalObject(field: string): Record<string, unknown> | undefined {
    return this.value[field] === undefined ? undefined : this.object(field);
  }

  nullable<T>(field: string, read: () => T): T | null {
    return this.value[field] === null ? null : read();
  }
}
