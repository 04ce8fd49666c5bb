import type { ChunkRow, LegHit } from 'src/modules/search/search.types.js';
import { fuse, withRows } from 'src/modules/search/fusion.js';

const row = (seq: string, metadata?: Record<string, unknown>): ChunkRow => ({
  seq,
  id: `chk_${seq}`,
  content: `chunk ${seq}`,
  documentId: `doc_${seq}`,
  ...(metadata ? { metadata } : {}),
});

const hit = (seq: string, score: number, withRow?: 'row' | 'metadata'): LegHit => ({
  chunkSeq: seq,
  score,
  ...(withRow ? { row: row(seq, withRow === 'metadata' ? { seq } : undefined) } : {}),
});

/** A reader of the chunks in `stored`, which records what it was asked for. */
function reader(stored: string[]) {
  const asked: string[][] = [];
  const read = (seqs: string[]) => {
    asked.push(seqs);
    return Promise.resolve(
      new Map(seqs.filter((seq) => stored.includes(seq)).map((seq) => [seq, row(seq, { seq, read: true })])),
    );
  };
  return { read, asked };
}

describe('fuse', () => {
  it('keeps, for each chunk, a row with its metadata when either leg has one', () => {
    const fused = fuse({
      semantic: [hit('1', 0.9, 'row'), hit('2', 0.8, 'metadata')],
      keyword: [hit('1', 7, 'metadata'), hit('2', 6), hit('3', 5)],
    });
    expect(fused.map(({ chunkSeq, row }) => [chunkSeq, row?.metadata])).toEqual([
      ['1', { seq: '1' }],
      ['2', { seq: '2' }],
      ['3', undefined],
    ]);
    expect(fused[0].score).toBe(1);
    expect(fused[2].row).toBeUndefined();
  });
});

describe('withRows', () => {
  const ranked = () =>
    fuse({
      semantic: [hit('1', 0.9, 'metadata'), hit('2', 0.8, 'row'), hit('3', 0.7, 'row'), hit('4', 0.6, 'row')],
      keyword: [hit('5', 9, 'metadata'), hit('2', 8), hit('3', 7), hit('6', 6)],
    });

  it('reads the rows of chunks that both legs ranked below the results shown, and nothing else', async () => {
    const { read, asked } = reader(['2', '3']);
    const top = await withRows(ranked(), 2, read);
    // Chunks 2 and 3 are second and third in both legs: ahead of the first of either leg alone.
    expect(top.map(({ chunkSeq }) => chunkSeq)).toEqual(['2', '3']);
    expect(asked).toEqual([['2', '3']]);
    expect(top.map(({ row }) => row.metadata)).toEqual([
      { seq: '2', read: true },
      { seq: '3', read: true },
    ]);

    const alone = reader([]);
    const first = fuse({ semantic: [hit('1', 0.9, 'metadata')], keyword: [hit('5', 9, 'metadata')] });
    expect((await withRows(first, 2, alone.read)).map(({ row }) => row.metadata)).toEqual([
      { seq: '1' },
      { seq: '5' },
    ]);
    expect(alone.asked).toEqual([]);
  });

  it('leaves out a chunk deleted since it was ranked, and takes the next in its place', async () => {
    const { read, asked } = reader(['3', '4', '6']); // 2 is gone
    const top = await withRows(ranked(), 3, read);
    expect(top.map(({ chunkSeq }) => chunkSeq)).toEqual(['3', '1', '5']);
    // The first round reads 2 and 3; the second, one entry for the place 2 left, has its row.
    expect(asked).toEqual([['2', '3']]);
    expect(top.map(({ row }) => row.content)).toEqual(['chunk 3', 'chunk 1', 'chunk 5']);
  });

  it('reads further rounds while deleted chunks leave places, and stops when the ranking runs out', async () => {
    const { read, asked } = reader(['6']);
    const top = await withRows(ranked(), 4, read);
    expect(top.map(({ chunkSeq }) => chunkSeq)).toEqual(['1', '5', '6']);
    expect(asked).toEqual([
      ['2', '3'],
      ['4', '6'],
    ]);
    expect(await withRows(ranked(), 10, reader([]).read)).toHaveLength(2);
  });
});
