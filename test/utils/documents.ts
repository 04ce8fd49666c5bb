import type TestAgent from 'supertest/lib/agent.js';
import { bearer, type CreatedKey } from './test-app.js';

export interface DocumentBody {
  document_id: string;
  status: 'processing' | 'ready' | 'failed';
  chunks_created?: number;
  error?: { code: string; message: string; details: Record<string, unknown> };
  progress?: { stage: string; percent: number };
  [key: string]: unknown;
}

/**
 * Polls get-document until the document leaves `processing` (or the time runs out), every 100 ms at
 * first, then less often: a suite that waits minutes for slow files stays within its key's rate limit.
 */
export async function waitForDocument(
  http: TestAgent,
  key: CreatedKey,
  datasetId: string,
  documentId: string,
  timeoutMs = 60_000,
): Promise<DocumentBody> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 100; ; pause = Math.min(1_000, pause * 1.25)) {
    const response = await http.get(`/v1/datasets/${datasetId}/documents/${documentId}`).set(bearer(key));
    const body = response.body as DocumentBody;
    if (response.status !== 200)
      throw new Error(`get-document answered ${response.status}: ${response.text}`);
    if (body.status !== 'processing') return body;
    if (Date.now() > deadline)
      throw new Error(`document ${documentId} still processing after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** Adds a document (a JSON body) and waits until it has been processed; returns it as get-document shows it. */
export async function addDocument(
  http: TestAgent,
  key: CreatedKey,
  datasetId: string,
  body: object,
): Promise<DocumentBody> {
  const response = await http
    .post(`/v1/datasets/${datasetId}/documents`)
    .set(bearer(key))
    .send(body)
    .expect(201);
  return waitForDocument(http, key, datasetId, (response.body as DocumentBody).document_id);
}

/**
 * Adds documents (JSON bodies) one after the other, then waits until all have been processed; returns
 * their ids in order.
 */
export async function ingest(
  app: { http: TestAgent },
  key: CreatedKey,
  datasetId: string,
  bodies: object[],
): Promise<string[]> {
  const ids: string[] = [];
  for (const body of bodies) {
    const response = await app.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .send(body)
      .expect(201);
    ids.push((response.body as DocumentBody).document_id);
  }
  for (const id of ids) await waitForDocument(app.http, key, datasetId, id);
  return ids;
}

export async function createDataset(http: TestAgent, key: CreatedKey, body: object = {}): Promise<string> {
  const response = await http
    .post('/v1/datasets')
    .set(bearer(key))
    .send({ name: `dataset ${Math.random().toString(36).slice(2)}`, ...body })
    .expect(201);
  return (response.body as { id: string }).id;
}
