import { type FakeOpenAI, hashVector, startFakeOpenAI } from '../../../test/utils/fake-openai.js';
import { OpenAIEmbeddingProvider } from 'src/modules/embeddings/openai-embedding.provider.js';

describe('OpenAIEmbeddingProvider', () => {
  let openai: FakeOpenAI;
  let provider: OpenAIEmbeddingProvider;

  beforeAll(async () => {
    openai = await startFakeOpenAI(4);
    provider = await OpenAIEmbeddingProvider.create({
      apiKey: 'test-key',
      baseUrl: openai.baseUrl,
      model: 'fake-embedder',
      dimensions: null,
    });
  });
  afterAll(() => openai.close());
  afterEach(() => {
    openai.reshape = (data) => data;
  });

  it('learns the dimension from its probe and embeds several queries in one request', async () => {
    expect(provider.dimensions).toBe(4);
    const before = openai.requests.length;
    const vectors = await provider.embedQueries(['first', 'second']);
    expect(openai.requests.slice(before)).toEqual([['first', 'second']]);
    vectors.forEach((vector, i) =>
      hashVector(['first', 'second'][i], 4).forEach((x, j) => expect(vector[j]).toBeCloseTo(x, 6)),
    );
  });

  it('puts the vectors in the inputs’ order whatever order the answer lists them in', async () => {
    openai.reshape = (data) => [...data].reverse();
    const [first, second] = await provider.embedPassages(['first', 'second']);
    expect(first[0]).toBeCloseTo(hashVector('first', 4)[0], 6);
    expect(second[0]).toBeCloseTo(hashVector('second', 4)[0], 6);
  });

  it.each([
    [
      "Google's: no index where it is 0",
      (data: { index: number }[]) =>
        data.map(({ index, ...item }) => (index === 0 ? item : { ...item, index })),
    ],
    ['no index at all', (data: { index: number }[]) => data.map(({ index: _, ...item }) => item)],
  ])('takes an answer with %s, each vector in its place', async (_, reshape) => {
    openai.reshape = reshape;
    const vectors = await provider.embedPassages(['first', 'second', 'third']);
    vectors.forEach((vector, i) =>
      hashVector(['first', 'second', 'third'][i], 4).forEach((x, j) => expect(vector[j]).toBeCloseTo(x, 6)),
    );
  });

  it('refuses an answer whose one missing index leaves another given twice', async () => {
    openai.reshape = (data) =>
      (data as { index: number }[]).map(({ index, ...item }) =>
        index === 1 ? item : { ...item, index: 1 - index },
      );
    await expect(provider.embedPassages(['first', 'second'])).rejects.toThrow(
      'the embeddings endpoint answered embeddings not indexed 0 to n - 1',
    );
  });

  it.each([
    ['one embedding short', (data: object[]) => data.slice(1), '1 embeddings for 2 inputs'],
    [
      'two embeddings of one index',
      (data: { index: number }[]) => data.map((item) => ({ ...item, index: 0 })),
      'embeddings not indexed 0 to n - 1',
    ],
    [
      'a vector of another dimension',
      (data: { embedding: number[] }[]) => data.map((item) => ({ ...item, embedding: [1, 0, 0] })),
      'a vector of 3 dimensions, not 4',
    ],
    [
      'a vector holding null',
      (data: { embedding: number[] }[]) => data.map((item) => ({ ...item, embedding: [1, 0, null, 0] })),
      'a vector holding something other than finite numbers',
    ],
    ['no list', () => ({}), 'no list of embeddings'],
  ])('refuses an answer with %s', async (_, reshape, issue) => {
    openai.reshape = reshape;
    await expect(provider.embedPassages(['first', 'second'])).rejects.toThrow(
      `the embeddings endpoint answered ${issue}`,
    );
  });
});
