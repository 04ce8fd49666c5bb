import type { Browser } from 'playwright-core';
import { inStep, launchChromium } from './utils/browser.js';
import { startTestApp, type TestApp } from './utils/test-app.js';
import { addDocument, createDataset } from './utils/documents.js';
import { createUser, type CreatedUser } from './utils/users.js';

/**
 * A person in a real browser: Swagger UI's "Authorize" with OAuth2 (PKCE) opens our sign-in and
 * consent pages in a popup, and "Try it out" then runs a search with the token it got.
 */
describe('Swagger UI with OAuth2 in a real browser', () => {
  let t: TestApp;
  let browser: Browser;
  let user: CreatedUser;
  let datasetId: string;

  beforeAll(async () => {
    t = await startTestApp({ SIGN_IN_MAX_ATTEMPTS: '1000' });
    user = await createUser(t, { account: 'acme' });
    const key = await t.createApiKey('acme');
    datasetId = await createDataset(t.http, key, { name: 'handbook' });
    await addDocument(t.http, key, datasetId, {
      content: 'Vacation requests go to the people team two weeks ahead.',
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t.close();
  });

  it('signs in, consents, authorizes Swagger UI and tries out a search', async () => {
    const context = await browser.newContext();
    // Each step fails within 10 s, leaving time for its screenshots inside the test's own limit.
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const pages = [page];
    const open = () => pages;

    await inStep('open the docs', open, async () => {
      await page.goto(`${t.url}/docs`);
      await page.getByRole('button', { name: 'Authorize' }).first().click();
    });

    const popup = await inStep('start OAuth2', open, async () => {
      const dialog = page.locator('.auth-container').filter({ hasText: 'oauth2' });
      // Filled in by the page's own set-up (initOAuth), as is the PKCE setting.
      expect(await dialog.locator('input[id^="client_id"]').inputValue()).toBe('swagger-ui');
      const opened = context.waitForEvent('page');
      await dialog.getByRole('button', { name: 'Apply given OAuth2 credentials' }).click();
      pages.push(await opened);
      return opened;
    });

    await inStep('sign in', open, async () => {
      await popup.waitForLoadState();
      await popup.getByLabel('Email').fill(user.user.email);
      await popup.getByLabel('Password').fill(user.password);
      await popup.getByRole('button', { name: 'Sign in' }).click();
    });

    await inStep('consent', open, async () => {
      await popup.getByRole('heading', { name: /wants to use your account/ }).waitFor();
      const closed = popup.waitForEvent('close');
      await popup.getByRole('button', { name: 'Allow' }).click();
      await closed; // Swagger UI's redirect page hands the code over and closes itself
    });

    await inStep('authorized', open, async () => {
      await page
        .locator('.auth-container')
        .filter({ hasText: 'oauth2' })
        .getByRole('button', { name: 'Remove authorization' })
        .waitFor();
      await page.getByRole('button', { name: 'Close' }).first().click();
    });

    const response = await inStep('try out a search', open, async () => {
      const operation = page.locator('.opblock').filter({ hasText: '/v1/mcp/query' }).first();
      await operation.locator('.opblock-summary').click();
      await operation.getByRole('button', { name: 'Try it out' }).click();
      await operation
        .locator('textarea.body-param__text')
        .fill(JSON.stringify({ query: 'vacation', dataset_id: datasetId }));
      const answered = page.waitForResponse((r) => r.url().endsWith('/v1/mcp/query'));
      await operation.getByRole('button', { name: 'Execute' }).click();
      return answered;
    });

    expect(response.status()).toBe(200);
    expect(response.request().headers().authorization).toMatch(/^Bearer svc_at_/);
    const body = (await response.json()) as { results: { content: string }[] };
    expect(body.results[0].content).toContain('Vacation requests');
    await context.close();
  }, 120_000);
});
