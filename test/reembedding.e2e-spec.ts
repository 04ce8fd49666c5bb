import { addDocument, createDataset, waitForDocument } from './utils/documents.js';
import { type FakeOpenAI, hashVector, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, startProcess, startTestApp } from './utils/test-app.js';
import { until } from './utils/until.js';

/** The cosine of two texts' vectors as the fake server gives them at `dimensions`. */
function cosine(a: string, b: string, dimensions: number): number {
  const x = hashVector(a, dimensions);
  const y = hashVector(b, dimensions);
  return x.reduce((sum, value, i) => sum + value * y[i], 0);
}

describe('Re-embedding a live dataset over the API', () => {
  let openai: FakeOpenAI;
  beforeAll(async () => {
    openai = await startFakeOpenAI(8); // fake-embedder: 8 dimensions
    openai.dimensionsOf = { 'other-embedder': 12 };
  });
  afterAll(() => openai.close());

  const texts = [
    'Rivers carry sediment to the sea.',
    'Glaciers carve valleys over millennia.',
    'Volcanoes build islands from lava.',
  ];
  const query = 'How are landscapes shaped?';

  it('keeps searching the old model’s vectors while the new are built, then switches to them at once', async () => {
    const t = await startTestApp(openAiEnv(openai));
    let next: Awaited<ReturnType<typeof startProcess>> | undefined;
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      for (const content of texts) await addDocument(t.http, key, datasetId, { content });
      const search = async () => {
        const response = await t.http
          .post('/v1/mcp/query')
          .set(bearer(key))
          .send({ dataset_id: datasetId, query, mode: 'semantic', explain: true, limit: 10 })
          .expect(200);
        return new Map(
          (response.body.results as { content: string; semantic_score: number }[]).map((hit) => [
            hit.content,
            hit.semantic_score,
          ]),
        );
      };
      const expectModel = (found: Map<string, number>, contents: string[], dimensions: number) => {
        expect([...found.keys()].sort()).toEqual([...contents].sort());
        for (const content of contents)
          expect(found.get(content)).toBeCloseTo(cosine(query, content, dimensions), 4);
      };
      expectModel(await search(), texts, 8);

      // The service moves to other-embedder, keeping fake-embedder for the datasets not yet moved;
      // on the same port, so that `t.http` reaches it.
      await t.terminate();
      next = await startProcess(
        t,
        {
          EMBEDDING_MODEL: 'other-embedder',
          EMBEDDING_PREVIOUS_PROVIDER: 'openai',
          EMBEDDING_PREVIOUS_MODEL: 'fake-embedder',
          REEMBED_POLL_SECONDS: '1',
        },
        '"listening"',
      );
      const reembedding = () =>
        t.http.get(`/v1/datasets/${datasetId}/reembedding`).set(bearer(key)).expect(200);
      expect((await reembedding()).body).toMatchObject({ status: 'none', model: null });
      // Not yet moved: searched with its own model's queries.
      expectModel(await search(), texts, 8);

      // The build waits for the embedding server, so that the dataset can be watched meanwhile.
      openai.holds = (text) => texts.includes(text);
      const asked = openai.inputs.length;
      const started = await t.http.post(`/v1/datasets/${datasetId}/reembedding`).set(bearer(key)).expect(202);
      expect(started.body).toEqual({
        dataset_id: datasetId,
        status: 'building',
        from_model: 'fake-embedder',
        model: 'other-embedder',
        dimensions: 12,
        requested_at: expect.any(String),
        chunks_total: 3,
        chunks_embedded: 0,
      });
      await until(() => openai.inputs.slice(asked).some((text) => texts.includes(text)), 30_000);
      // Asked again for the same model: the build under way.
      const again = await t.http.post(`/v1/datasets/${datasetId}/reembedding`).set(bearer(key)).expect(202);
      expect(again.body).toMatchObject({ status: 'building', requested_at: started.body.requested_at });

      // A document indexed meanwhile gets the new model's vector, beside: the old model's vector leg
      // does not find it yet, the keyword leg does.
      const late = 'Wind shapes dunes in deserts.';
      const upload = await t.http
        .post(`/v1/datasets/${datasetId}/documents`)
        .set(bearer(key))
        .send({ content: late })
        .expect(201);
      await waitForDocument(t.http, key, datasetId, upload.body.document_id as string);
      expectModel(await search(), texts, 8);
      expect((await reembedding()).body).toMatchObject({ chunks_total: 4, chunks_embedded: 1 });

      openai.release();
      await until(async () => (await reembedding()).body.status === 'none', 30_000);
      expectModel(await search(), [...texts, late], 12);
      const { rows } = await t.sql.query(
        `SELECT embedding_model, embedding_dimensions, next_embedding_model FROM dataset_index WHERE dataset_id = $1`,
        [datasetId],
      );
      expect(rows).toEqual([
        { embedding_model: 'other-embedder', embedding_dimensions: 12, next_embedding_model: null },
      ]);
      expect(next.output()).toContain('dataset re-embedded: its searches use the new model');

      // Cancelled: the vectors built so far are dropped, the model kept. Cancelling nothing is no error.
      openai.holds = (text) => texts.includes(text);
      await t.http.post(`/v1/datasets/${datasetId}/reembedding`).set(bearer(key)).expect(202);
      await t.http.delete(`/v1/datasets/${datasetId}/reembedding`).set(bearer(key)).expect(204);
      await t.http.delete(`/v1/datasets/${datasetId}/reembedding`).set(bearer(key)).expect(204);
      expect((await reembedding()).body).toMatchObject({ status: 'none' });
      openai.release();
      expectModel(await search(), [...texts, late], 12);

      // Another account neither sees nor changes it.
      const stranger = await t.createApiKey('another account');
      const refused = await t.http
        .post(`/v1/datasets/${datasetId}/reembedding`)
        .set(bearer(stranger))
        .expect(404);
      expect(refused.body).toMatchObject({ code: 'dataset_not_found' });
      await t.http.get(`/v1/datasets/${datasetId}/reembedding`).set(bearer(stranger)).expect(404);
    } finally {
      openai.release();
      await next?.stop();
      await t.close();
    }
  }, 120_000);

  it('refuses a re-embedding on a keyword-only service, which has no model to re-embed with', async () => {
    const t = await startTestApp({ EMBEDDING_PROVIDER: 'none' });
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      const response = await t.http
        .post(`/v1/datasets/${datasetId}/reembedding`)
        .set(bearer(key))
        .expect(400);
      expect(response.body).toMatchObject({ code: 'semantic_unavailable' });
      await t.http.post('/v1/datasets/ds_missing/reembedding').set(bearer(key)).expect(404);
    } finally {
      await t.close();
    }
  });
});
