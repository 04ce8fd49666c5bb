import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

describe('Datasets API', () => {
  let t: TestApp;
  let key: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp();
    key = await t.createApiKey();
  });
  afterAll(() => t.close());

  it('creates a dataset with the contract fields and a ds_ id', async () => {
    const response = await t.http
      .post('/v1/datasets')
      .set(bearer(key))
      .send({ name: '  Manuals  ', description: 'All manuals', metadata: { team: 'docs' } })
      .expect(201);
    expect(response.body).toEqual({
      id: expect.stringMatching(/^ds_[0-9A-Za-z]{22}$/),
      name: 'Manuals',
      description: 'All manuals',
      is_public: false,
      document_count: 0,
      created_at: expect.any(String),
      updated_at: response.body.created_at,
      metadata: { team: 'docs' },
    });
  });
});
