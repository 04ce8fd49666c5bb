import { type FakeOpenAI, fakeTokens, hashVector, startFakeOpenAI } from '../../../test/utils/fake-openai.js';
import {
  OpenAIEmbeddingProvider,
  type PassageRequests,
} from 'src/modules/embeddings/openai-embedding.provider.js';

const REQUESTS: PassageRequests = { batch: 256, tokens: 200_000, concurrency: 4, rateLimitWaitMs: 10_000 };

/** Whether `vectors` are the fake's for `texts`, each in its place. */
function expectVectorsOf(vectors: number[][], texts: string[]): void {
  expect(vectors).toHaveLength(texts.length);
  vectors.forEach((vector, i) =>
    hashVector(texts[i], 4).forEach((x, j) => expect(vector[j]).toBeCloseTo(x, 6)),
  );
}

describe('OpenAIEmbeddingProvider', () => {
  let openai: FakeOpenAI;
  let provider: OpenAIEmbeddingProvider;
  const warnings: string[] = [];
  const make = (requests: Partial<PassageRequests> = {}) =>
    OpenAIEmbeddingProvider.create({
      apiKey: 'test-key',
      baseUrl: openai.baseUrl,
      model: 'fake-embedder',
      dimensions: null,
      requests: { ...REQUESTS, ...requests },
      logger: { warn: (_: unknown, message: string) => warnings.push(message) },
    });

  beforeAll(async () => {
    openai = await startFakeOpenAI(4);
    provider = await make();
  });
  afterAll(() => openai.close());
  afterEach(() => {
    openai.reshape = (data) => data;
    openai.rateLimit(0);
    openai.limits = {};
    openai.delayMs = 0;
    openai.failing.clear();
    openai.release();
    warnings.length = 0;
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

  describe('passages', () => {
    const texts = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix} ${i}`);

    it('coalesces the passages of concurrent callers into full requests, with at most `concurrency` in flight', async () => {
      const batcher = await make({ batch: 10, concurrency: 2 });
      openai.delayMs = 50;
      openai.mostInFlight = 0;
      const asked = openai.requests.length;
      const callers = Array.from({ length: 20 }, (_, i) => texts(`document ${i}`, 3));
      const results = await Promise.all(callers.map((passages) => batcher.embedPassages(passages)));
      results.forEach((vectors, i) => expectVectorsOf(vectors, callers[i]));
      const sizes = openai.requests.slice(asked).map((request) => request.length);
      // Two lone callers go at once; the 54 passages queued behind them go ten by ten.
      expect(sizes).toEqual([3, 3, 10, 10, 10, 10, 10, 4]);
      expect(openai.mostInFlight).toBe(2);
    });

    it('closes a request at its token budget', async () => {
      const batcher = await make({ tokens: 100 });
      const asked = openai.requests.length;
      const passages = texts('x'.repeat(60), 10); // 21 estimated tokens each: four a request
      expectVectorsOf(await batcher.embedPassages(passages), passages);
      expect(openai.requests.slice(asked).map((request) => request.length)).toEqual([4, 4, 2]);
    });

    it('waits out 429s for as long as `retry-after-ms` says, then embeds', async () => {
      const passages = texts('limited', 3);
      openai.rateLimit(2, { 'retry-after-ms': '300' });
      const asked = openai.answers.length;
      const started = Date.now();
      expectVectorsOf(await provider.embedPassages(passages), passages);
      expect(Date.now() - started).toBeGreaterThanOrEqual(550);
      expect(openai.answers.slice(asked).map((answer) => answer.status)).toEqual([429, 429, 200]);
      expect(warnings).toContain('the embeddings endpoint is rate limiting: passages wait');
    });

    it('honours `retry-after` in seconds, and pauses the other requests meanwhile', async () => {
      const batcher = await make({ concurrency: 2 });
      openai.rateLimit(1, { 'retry-after': '1' });
      openai.delayMs = 100;
      const started = Date.now();
      const first = batcher.embedPassages(['first']);
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Sent after the 429 came back: it waits for the pause, as the refused request does.
      const second = batcher.embedPassages(['second']);
      const ended: number[] = [];
      await Promise.all([first, second].map((done) => done.then(() => ended.push(Date.now() - started))));
      expect(Math.min(...ended)).toBeGreaterThanOrEqual(1_000);
    });

    it('fails a request still answered 429 past `rateLimitWaitMs`, as a transient error', async () => {
      const impatient = await make({ rateLimitWaitMs: 500 });
      openai.rateLimit(100, { 'retry-after-ms': '200' });
      const started = Date.now();
      await expect(impatient.embedPassages(['never'])).rejects.toThrow(
        /kept answering 429 \(rate limited\) for 0 s, past the 0\.5 s a request waits/,
      );
      expect(Date.now() - started).toBeLessThan(1_000);
    });

    it('splits a batch refused for too many inputs, and holds later requests to the limit the server gave', async () => {
      const batcher = await make();
      openai.limits = { maxInputs: 3 };
      const asked = openai.answers.length;
      const passages = texts('many', 10);
      expectVectorsOf(await batcher.embedPassages(passages), passages);
      expect(openai.answers.slice(asked)).toEqual([
        { inputs: 10, status: 400 },
        ...[3, 3, 3, 1].map((inputs) => ({ inputs, status: 200 })),
      ]);
      expect(batcher.passageLimits().maxItems).toBe(3);
      const later = texts('later', 5);
      expectVectorsOf(await batcher.embedPassages(later), later);
      expect(openai.answers.slice(asked + 5).map((answer) => answer.inputs)).toEqual([3, 2]);
    });

    it('splits a batch refused for its tokens in halves until each part is taken', async () => {
      const batcher = await make();
      openai.limits = { maxRequestTokens: 60 };
      const passages = texts('y'.repeat(70), 8); // 19 of the fake's tokens each: three a request
      const asked = openai.answers.length;
      expectVectorsOf(await batcher.embedPassages(passages), passages);
      const answers = openai.answers.slice(asked);
      expect(answers.filter((answer) => answer.status === 200).map((answer) => answer.inputs)).toEqual([
        2, 2, 2, 2,
      ]);
      expect(answers.filter((answer) => answer.status === 400).map((answer) => answer.inputs)).toEqual([
        8, 4, 4,
      ]);
      expect(batcher.passageLimits().maxWeight).toBeLessThan(200_000);
    });

    it('embeds a passage too long for the model from its start, as the model would truncate it', async () => {
      openai.limits = { maxInputTokens: 100 };
      const long = 'word '.repeat(200); // 250 of the fake's tokens
      const [vector] = await provider.embedPassages([long]);
      const sent = openai.inputs.at(-1)!;
      expect(long.startsWith(sent)).toBe(true);
      expect(fakeTokens(sent)).toBeLessThanOrEqual(100);
      expect(fakeTokens(sent)).toBeGreaterThan(80);
      expectVectorsOf([vector], [sent]);
      expect(warnings).toContain('a passage too long for the embedding model was embedded truncated');
    });

    it('fails only the callers whose passages were in a failed request', async () => {
      const batcher = await make({ concurrency: 1 });
      openai.failing.add('poison');
      const poisoned = batcher.embedPassages(['poison', 'with it']);
      const apart = batcher.embedPassages(['apart']);
      await expect(poisoned).rejects.toThrow('injected failure');
      expectVectorsOf(await apart, ['apart']);
    });

    it('embeds queries at once while every passages’ request is held', async () => {
      const batcher = await make({ concurrency: 1 });
      openai.holds = (text) => text.startsWith('held');
      const passages = batcher.embedPassages(['held passage']);
      const queued = batcher.embedPassages(['queued passage']);
      expectVectorsOf([await batcher.embedQuery('a query')], ['a query']);
      expectVectorsOf(await batcher.embedQueries(['two', 'queries']), ['two', 'queries']);
      openai.release();
      expectVectorsOf(await passages, ['held passage']);
      expectVectorsOf(await queued, ['queued passage']);
    });
  });
});
