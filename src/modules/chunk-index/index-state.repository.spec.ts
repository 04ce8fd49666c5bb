import type { Read } from 'src/database/read.js';
import { IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';

const ROW = {
  chunkCount: 3,
  totalChunkLength: 30,
  embeddingModel: 'm',
  embeddingDimensions: 4,
  nextEmbeddingModel: null,
  nextEmbeddingDimensions: null,
  vectorIndexDimensions: null,
  fusion: null,
};

/** A read that answers `rows` by the statement's key, and keeps each statement's WHERE and values. */
function recording(rows: Record<string, object>) {
  const asked: { where: string; values: unknown[] }[] = [];
  const read = ((text: string, values: unknown[] = []) => {
    asked.push({ where: text.slice(text.indexOf('WHERE')).trim(), values });
    const row = rows[String(values[0])];
    return Promise.resolve(row ? [row] : []);
  }) as Read;
  return { read, asked };
}

describe('IndexStateRepository.of', () => {
  it('reads a dataset by id once, then by the seq it learnt (a statement Citus routes)', async () => {
    const { read, asked } = recording({ ds_a: { ...ROW, seq: '7' }, 7: { ...ROW, seq: '7' } });
    const repository = new IndexStateRepository();
    expect(await repository.of(read, 'ds_a')).toEqual(ROW);
    expect(await repository.of(read, 'ds_a')).toEqual(ROW);
    expect(asked).toEqual([
      { where: 'WHERE i.dataset_id = $1', values: ['ds_a'] },
      { where: 'WHERE i.dataset_seq = $1', values: ['7'] },
    ]);
  });

  it('learns nothing from a dataset without a state row', async () => {
    const { read, asked } = recording({});
    const repository = new IndexStateRepository();
    await repository.of(read, 'ds_gone');
    await repository.of(read, 'ds_gone');
    expect(asked.map((a) => a.where)).toEqual(['WHERE i.dataset_id = $1', 'WHERE i.dataset_id = $1']);
  });
});
