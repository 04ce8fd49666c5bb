import type { Browser, Locator, Response } from 'playwright-core';
import { inStep, launchChromium } from './utils/browser.js';
import { waitForDocument } from './utils/documents.js';
import { type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

/**
 * A developer's first hour in Swagger UI, in a real browser, with the examples as the document gives
 * them: authorize with an API key, create two datasets, add a document and a file, and search.
 */
describe('Swagger UI as it stands', () => {
  let t: TestApp;
  let browser: Browser;
  let key: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp();
    key = await t.createApiKey();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t.close();
  });

  it('authorizes, creates twice, uploads and searches with the examples', async () => {
    const context = await browser.newContext();
    // Each step fails within 10 s, leaving time for its screenshots inside the test's own limit.
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const open = () => [page];

    /** Opens an operation and presses "Try it out". */
    const tryOut = async (operationId: string, tag: string): Promise<Locator> => {
      const operation = page.locator(`#operations-${tag}-${operationId}`);
      await operation.locator('.opblock-summary').click();
      await operation.getByRole('button', { name: 'Try it out' }).click();
      return operation;
    };
    const execute = async (operation: Locator, path: RegExp): Promise<Response> => {
      const answered = page.waitForResponse((r) => path.test(new URL(r.url()).pathname));
      await operation.getByRole('button', { name: 'Execute' }).click();
      return answered;
    };
    const fillPath = (operation: Locator, name: string, value: string) =>
      operation.locator(`tr[data-param-name="${name}"] input`).fill(value);

    await inStep('authorize with an API key', open, async () => {
      await page.goto(`${t.url}/docs`);
      await page.getByRole('button', { name: 'Authorize' }).first().click();
      const dialog = page.locator('.auth-container').filter({ hasText: 'bearer' }).first();
      // The dialog says how to get a key.
      await dialog.getByText('api-keys create').first().waitFor();
      await dialog.locator('input').fill(key.api_key);
      await dialog.getByRole('button', { name: 'Apply credentials' }).click();
      await page.getByRole('button', { name: 'Close' }).first().click();
    });

    const created = await inStep('create a dataset twice, with different names', open, async () => {
      const operation = await tryOut('createDataset', 'datasets');
      const first = await execute(operation, /^\/v1\/datasets$/);
      const body = operation.locator('textarea.body-param__text');
      await body.fill((await body.inputValue()).replace(/"name": "[^"]*"/, '"name": "Second dataset"'));
      const second = await execute(operation, /^\/v1\/datasets$/);
      return [first, second];
    });
    expect(created.map((response) => response.status())).toEqual([201, 201]);
    const [first, second] = (await Promise.all(created.map((r) => r.json()))) as { id: string }[];
    expect(first.id).not.toBe(second.id);
    expect(created.map((r) => r.headers()['idempotent-replayed'])).toEqual([undefined, undefined]);

    const documents = await inStep('add a document and a file', open, async () => {
      const text = await tryOut('createDocument', 'documents');
      await fillPath(text, 'dataset_id', first.id);
      const json = await execute(text, /\/documents$/);
      const file = await tryOut('uploadDocument', 'documents');
      await fillPath(file, 'dataset_id', first.id);
      await file.locator('input[type="file"]').setInputFiles({
        name: 'setup.md',
        mimeType: 'text/markdown',
        buffer: Buffer.from('# Setup\n\nTo install on Linux, unpack the archive.\n'),
      });
      const multipart = await execute(file, /\/documents\/upload$/);
      return [json, multipart];
    });
    expect(documents.map((response) => response.status())).toEqual([201, 201]);
    for (const response of documents) {
      const { document_id } = (await response.json()) as { document_id: string };
      expect((await waitForDocument(t.http, key, first.id, document_id)).status).toBe('ready');
    }

    const search = await inStep('search with the example', open, async () => {
      const operation = await tryOut('searchDataset', 'search');
      const body = operation.locator('textarea.body-param__text');
      // The one value the example cannot know, which it says to replace.
      await body.fill((await body.inputValue()).replace('REPLACE_WITH_YOUR_DATASET_ID', first.id));
      return execute(operation, /^\/v1\/mcp\/query$/);
    });
    expect(search.status()).toBe(200);
    const results = ((await search.json()) as { results: { document_id: string }[] }).results;
    const ids = await Promise.all(
      documents.map(async (r) => ((await r.json()) as { document_id: string }).document_id),
    );
    expect(new Set(results.map((result) => result.document_id))).toEqual(new Set(ids));

    const evaluation = await inStep('evaluate the dataset with the example', open, async () => {
      const operation = await tryOut('evaluateSearch', 'search');
      await fillPath(operation, 'dataset_id', first.id);
      return execute(operation, /\/evaluations$/);
    });
    expect(evaluation.status()).toBe(200);
    // Both documents carry the example's metadata (category guide), and the keyword leg finds them.
    const measured = (await evaluation.json()) as { modes: { mode: string; recall_at_100: number }[] };
    expect(measured.modes[0]).toMatchObject({ mode: 'keyword', recall_at_100: 1 });

    await inStep('error examples are their own status', open, async () => {
      const operation = page.locator('#operations-datasets-createDataset');
      const unauthorized = operation.locator('tr.response[data-code="4XX"]');
      await unauthorized.getByText('authentication_required').first().waitFor();
      expect(await unauthorized.getByText('dataset_not_found').count()).toBe(0);
      // Unfolded, an operation shows what is particular to it (about 3,600 px): the generic errors are
      // the shared ranges, and error statuses do not repeat the headers every response carries.
      expect((await operation.boundingBox())!.height).toBeLessThan(5_000);
    });
    await context.close();
  }, 120_000);
});
