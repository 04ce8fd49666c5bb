import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { PROJECT_ROOT } from 'src/config/project-root.js';
import { isStaticModelDir, loadStaticModel, readEmbeddings } from 'src/modules/embeddings/static-model.js';

/** The real Model2Vec model of these machines (../shared/models/README.md). */
const POTION = join(PROJECT_ROOT, '..', 'shared', 'models', 'minishlab', 'potion-base-2M');

/** A safetensors file of one tensor `embeddings` holding `data` (already encoded as `dtype`). */
function safetensors(dtype: string, shape: number[], data: Buffer): Buffer {
  const header = Buffer.from(
    JSON.stringify({ embeddings: { dtype, shape, data_offsets: [0, data.length] } }),
    'utf8',
  );
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(header.length));
  return Buffer.concat([length, header, data]);
}

describe('A static embedding model (Model2Vec)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'static-model-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the embedding table in F32, F16 and BF16', () => {
    const values = [1, -2, 0.5, 0];
    const f32 = Buffer.alloc(16);
    values.forEach((v, i) => f32.writeFloatLE(v, 4 * i));
    // Half precision: 1 = 0x3c00, -2 = 0xc000, 0.5 = 0x3800; bfloat16 is a float32's upper half.
    const f16 = Buffer.from(new Uint16Array([0x3c00, 0xc000, 0x3800, 0]).buffer);
    const bf16 = Buffer.from(new Uint16Array([0x3f80, 0xc000, 0x3f00, 0]).buffer);
    for (const [dtype, data] of [
      ['F32', f32],
      ['F16', f16],
      ['BF16', bf16],
    ] as const) {
      const path = join(dir, `${dtype}.safetensors`);
      writeFileSync(path, safetensors(dtype, [2, 2], data));
      const { table, rows, dimensions } = readEmbeddings(path);
      expect([dtype, rows, dimensions, Array.from(table)]).toEqual([dtype, 2, 2, values]);
    }
  });

  it('refuses a tensor whose bytes do not match its shape, or of a type it does not read', () => {
    const short = join(dir, 'short.safetensors');
    writeFileSync(short, safetensors('F32', [2, 2], Buffer.alloc(12)));
    expect(() => readEmbeddings(short)).toThrow(/do not match its shape/);
    const int8 = join(dir, 'int8.safetensors');
    writeFileSync(int8, safetensors('I8', [2, 2], Buffer.alloc(4)));
    expect(() => readEmbeddings(int8)).toThrow(/tensors of I8 are not read/);
  });

  it('embeds as Model2Vec does: the mean of the tokens’ rows without special or unknown ones, L2-normalised', () => {
    expect(isStaticModelDir(POTION)).toBe(true);
    const model = loadStaticModel(POTION);
    expect([model.dimensions, model.maxTokens]).toEqual([64, 512]);
    const definition = JSON.parse(readFileSync(join(POTION, 'tokenizer.json'), 'utf8')) as object;
    const ids = new Tokenizer(definition, {}).encode('mitochondria make energy', {
      add_special_tokens: false,
    }).ids;
    expect(ids.length).toBeGreaterThan(2);
    const { table, dimensions } = readEmbeddings(join(POTION, 'model.safetensors'));
    const mean = Array.from({ length: dimensions }, (_, d) =>
      ids.reduce((sum: number, id: number) => sum + table[id * dimensions + d], 0),
    );
    const norm = Math.hypot(...mean);
    const [vector, withUnknown] = model.embed(['mitochondria make energy', 'mitochondria make energy ☃']);
    vector.forEach((value, d) => expect(value).toBeCloseTo(mean[d] / norm, 6));
    // A character the vocabulary lacks is its unknown token, which adds nothing to the mean.
    expect(withUnknown).toEqual(vector);
    expect(model.countTokens('mitochondria make energy')).toBe(ids.length);
  });

  it('keeps at most 512 tokens of a text', () => {
    const model = loadStaticModel(POTION);
    const [first, longer] = model.embed([`${'energy '.repeat(512)}`, `${'energy '.repeat(512)}cell`]);
    expect(longer).toEqual(first);
  });

  it('tells a static model from a transformer by its config', () => {
    const transformer = join(dir, 'transformer');
    mkdirSync(transformer);
    writeFileSync(join(transformer, 'config.json'), JSON.stringify({ model_type: 'bert' }));
    expect(isStaticModelDir(transformer)).toBe(false);
    expect(isStaticModelDir(join(dir, 'missing'))).toBe(false);
  });
});
