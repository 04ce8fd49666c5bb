// The main job through a client generated from the served document by Hey API (openapi-ts): run by
// test/generated-client.e2e-spec.ts, which generates `./client` next to a copy of this file, compiles
// both with strict TypeScript and runs `node flow.js <api key>`. It prints what it saw as JSON.
import { client } from './client/client.gen.js';
import {
  batchSearchDataset,
  createDataset,
  createDocument,
  deleteDataset,
  deleteDocument,
  evaluateSearch,
  getDataset,
  getDocument,
  getDocumentChunk,
  getDocumentText,
  listDocumentChunks,
  searchDataset,
  uploadDocument,
} from './client/sdk.gen.js';
import type { DocumentResponseDto } from './client/types.gen.js';

const apiKey = process.argv[2];
// The base URL is the document's `servers` entry, which the generator wrote into the client.
client.setConfig({ auth: () => apiKey, throwOnError: true });

async function waitUntilProcessed(datasetId: string, documentId: string): Promise<DocumentResponseDto> {
  for (let tries = 0; tries < 300; tries++) {
    const { data } = await getDocument({ path: { dataset_id: datasetId, document_id: documentId } });
    if (data.status !== 'processing') return data;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`document ${documentId} still processing`);
}

const { data: dataset } = await createDataset({ body: { name: 'Generated client' } });
const { data: text } = await createDocument({
  path: { dataset_id: dataset.id },
  body: {
    content: 'To install on Linux, download the package and run the installer.',
    metadata: { title: 'Install' },
  },
});
// A Blob, as browsers and Node's FormData send one: its file name is `blob`, its type is declared.
const { data: file } = await uploadDocument({
  path: { dataset_id: dataset.id },
  body: {
    file: new Blob(['# Passwords\n\nReset a password from the sign-in page.\n'], { type: 'text/markdown' }),
    metadata: JSON.stringify({ category: 'account' }),
  },
});
const processed = [
  await waitUntilProcessed(dataset.id, text.document_id),
  await waitUntilProcessed(dataset.id, file.document_id),
];
const path = { dataset_id: dataset.id, document_id: text.document_id };
const { data: page } = await getDocumentText({ path, query: { offset: 0, limit: 1000 } });
const { data: chunks } = await listDocumentChunks({ path, query: { limit: 20 } });
const { data: around } = await getDocumentChunk({
  path: { ...path, chunk_id: chunks.chunks[0].chunk_id },
  query: { neighbours: 1 },
});
const { data: search } = await searchDataset({ body: { query: 'install on linux', dataset_id: dataset.id } });
const { data: batch } = await batchSearchDataset({
  body: { queries: ['install on linux', 'reset a password'], dataset_id: dataset.id },
});
const { data: evaluation } = await evaluateSearch({
  path: { dataset_id: dataset.id },
  body: {
    queries: [
      { query: 'install on linux', relevant: [{ document_id: text.document_id }] },
      { query: 'reset a password', relevant: [{ metadata: { category: 'account' }, grade: 2 }] },
    ],
    per_query: true,
  },
});
await deleteDocument({ path: { dataset_id: dataset.id, document_id: text.document_id } });
await deleteDataset({ path: { dataset_id: dataset.id } });
const missing = await getDataset({ path: { dataset_id: dataset.id }, throwOnError: false });

console.log(
  JSON.stringify({
    statuses: processed.map((document) => document.status),
    file: { filename: file.filename, metadata: file.metadata },
    search: search.results.map((result) => ({ document_id: result.document_id, score: result.score })),
    batch: batch.results.map((item) => ({ query: item.query, results: item.results.length })),
    evaluation: {
      modes: evaluation.modes.map((mode) => mode.mode),
      mrr_at_10: evaluation.modes[0].mrr_at_10,
      per_query: evaluation.per_query?.length,
    },
    documents: { text: text.document_id, file: file.document_id },
    read: {
      text: page.text,
      next_offset: page.next_offset,
      chunks: chunks.chunks.map(
        (chunk) => page.text.slice(chunk.char_start, chunk.char_end) === chunk.content,
      ),
      around: around.chunk.chunk_id === chunks.chunks[0].chunk_id,
    },
    after_delete: { status: missing.response?.status, code: missing.error?.code },
  }),
);
