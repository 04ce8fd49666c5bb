import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer as HubTokenizer } from '@huggingface/tokenizers';

/**
 * The part of the tokenizer used here. The package's declarations import their own files without
 * extensions, which `nodenext` resolution cannot follow, so its types arrive unresolved.
 */
interface TextTokenizer {
  encode(text: string, options: { add_special_tokens: boolean }): { ids: number[] };
}
const Tokenizer = HubTokenizer as unknown as new (definition: object, config: object) => TextTokenizer;

/**
 * The files of a static embedding model (Model2Vec) as the model hub serves it: one vector per token
 * of its vocabulary (`model.safetensors`), the tokenizer, and the config that says it is one.
 */
export const STATIC_MODEL_FILES = ['config.json', 'tokenizer.json', 'model.safetensors'];

/** Token ids a text is embedded from, at most: Model2Vec's own default. */
const MAX_TOKENS = 512;

/** A Model2Vec model, loaded: a table lookup and a mean per text, in the thread that loaded it. */
export interface StaticModel {
  dimensions: number;
  maxTokens: number;
  /** The model's tokens in a text, as it embeds them (no special tokens, unknown ones left out). */
  countTokens: (text: string) => number;
  embed: (texts: string[]) => number[][];
}

/** Whether a config (`config.json`, parsed) is a Model2Vec model's. */
export function isStaticModelConfig(config: unknown): boolean {
  return (config as { model_type?: unknown } | null)?.model_type === 'model2vec';
}

/** Whether the model in `dir` is a static one (its config says so), rather than a transformer. */
export function isStaticModelDir(dir: string): boolean {
  const path = join(dir, 'config.json');
  if (!existsSync(path)) return false;
  try {
    return isStaticModelConfig(JSON.parse(readFileSync(path, 'utf8')));
  } catch {
    return false;
  }
}

/**
 * Loads the model in `dir`. A text is embedded as Model2Vec embeds it: tokenized without special
 * tokens, unknown tokens dropped, the first `MAX_TOKENS` ids kept, the mean of their rows, L2-normalised.
 */
export function loadStaticModel(dir: string): StaticModel {
  const { table, rows, dimensions } = readEmbeddings(join(dir, 'model.safetensors'));
  const definition = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as TokenizerJson;
  const tokenizer = new Tokenizer(definition, {});
  const unknown = unknownTokenId(definition);
  const ids = (text: string) =>
    tokenizer
      .encode(text, { add_special_tokens: false })
      .ids.filter((id) => id !== unknown && id < rows)
      .slice(0, MAX_TOKENS);
  return {
    dimensions,
    maxTokens: MAX_TOKENS,
    countTokens: (text) => tokenizer.encode(text, { add_special_tokens: false }).ids.length,
    embed: (texts) => texts.map((text) => meanOfRows(table, dimensions, ids(text))),
  };
}

/** The L2-normalised mean of the table's rows `ids` (a zero vector for none). */
function meanOfRows(table: Float32Array, dimensions: number, ids: number[]): number[] {
  const sum = new Float64Array(dimensions);
  for (const id of ids) {
    const row = id * dimensions;
    for (let d = 0; d < dimensions; d++) sum[d] += table[row + d];
  }
  let norm = 0;
  for (let d = 0; d < dimensions; d++) norm += sum[d] * sum[d];
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  return Array.from(sum, (value) => value * scale);
}

interface TokenizerJson {
  model?: { unk_token?: string; vocab?: Record<string, number> | [string, number][] };
}

/** The id of the tokenizer's unknown token, which Model2Vec leaves out of a text's mean. */
function unknownTokenId(definition: TokenizerJson): number | undefined {
  const { unk_token: token, vocab } = definition.model ?? {};
  if (token === undefined || vocab === undefined || Array.isArray(vocab)) return undefined;
  return vocab[token];
}

interface TensorHeader {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

/**
 * The embedding table of a safetensors file: an 8-byte little-endian header length, a JSON header
 * naming each tensor's type, shape and byte range, then the data. The tensor is `embeddings` (or the
 * file's only one), of vocabulary × dimensions, in F32, F16 or BF16, read into 32-bit floats.
 */
export function readEmbeddings(path: string): { table: Float32Array; rows: number; dimensions: number } {
  const file = readFileSync(path);
  const headerLength = Number(file.readBigUInt64LE(0));
  const header = JSON.parse(file.subarray(8, 8 + headerLength).toString('utf8')) as Record<
    string,
    TensorHeader
  >;
  const names = Object.keys(header).filter((name) => name !== '__metadata__');
  const name = names.includes('embeddings') ? 'embeddings' : names.length === 1 ? names[0] : undefined;
  if (name === undefined) throw new Error(`${path}: no "embeddings" tensor among ${names.join(', ')}`);
  const {
    dtype,
    shape,
    data_offsets: [start, end],
  } = header[name];
  if (shape.length !== 2) throw new Error(`${path}: "${name}" is not a matrix (shape ${shape.join('×')})`);
  const [rows, dimensions] = shape;
  const data = file.subarray(8 + headerLength + start, 8 + headerLength + end);
  return { table: toFloat32(data, dtype, rows * dimensions, path), rows, dimensions };
}

function toFloat32(data: Buffer, dtype: string, count: number, path: string): Float32Array {
  const width = { F32: 4, F16: 2, BF16: 2 }[dtype];
  if (width === undefined) throw new Error(`${path}: tensors of ${dtype} are not read (F32, F16 or BF16)`);
  if (data.length !== count * width) throw new Error(`${path}: the tensor's bytes do not match its shape`);
  // A copy: the file's buffer need not be aligned for a view of 32-bit floats.
  if (dtype === 'F32') return new Float32Array(new Uint8Array(data).buffer);
  const table = new Float32Array(count);
  const bits = new Uint32Array(table.buffer);
  for (let i = 0; i < count; i++) {
    const half = data.readUInt16LE(2 * i);
    if (dtype === 'BF16') bits[i] = half << 16;
    else table[i] = halfToFloat(half);
  }
  return table;
}

/** An IEEE 754 half-precision number's value. */
function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 0x1f) return fraction ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}
