import { readFile } from 'node:fs/promises';
import { waitForDocument } from './utils/documents.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

/** CSV files as spreadsheets and exports write them, each read as `header: value` rows. */
describe('CSV dialects', () => {
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;
  beforeAll(async () => {
    t = await startTestApp();
    key = await t.createApiKey();
    datasetId = (await t.http.post('/v1/datasets').set(bearer(key)).send({ name: 'Tables' }).expect(201)).body
      .id;
  });
  afterAll(() => t.close());

  /** Uploads a fixture of test/fixtures/csv and gives the text of its chunks, in order. */
  async function ingested(name: string): Promise<string> {
    const upload = await t.http
      .post(`/v1/datasets/${datasetId}/documents/upload`)
      .set(bearer(key))
      .attach('file', await readFile(`test/fixtures/csv/${name}`), name)
      .expect(201);
    const document = await waitForDocument(t.http, key, datasetId, upload.body.document_id);
    expect(document.status).toBe('ready');
    const { rows } = await t.sql.query<{ content: string }>(
      'SELECT content FROM chunks WHERE document_id = $1 ORDER BY ordinal',
      [upload.body.document_id],
    );
    return rows.map((row) => row.content).join('\n');
  }

  it('reads a semicolon CSV with decimal commas and CRLF line ends', async () => {
    expect((await ingested('semicolon-european.csv')).split('\n')).toEqual([
      'Artikelnummer: 10041 | Bezeichnung: Kugelschreiber blau | Preis (EUR): 1,49 | Lagerort: Regal A3 | ' +
        'Bemerkung: Nachbestellen; Lieferant Müller',
      'Artikelnummer: 10042 | Bezeichnung: Notizblock kariert | Preis (EUR): 2,99 | Lagerort: Regal B1',
      'Artikelnummer: 10043 | Bezeichnung: Heftklammern 24/6 | Preis (EUR): 0,89 | Lagerort: Regal A1 | ' +
        'Bemerkung: Restposten, 40 Stück',
    ]);
  });

  it('reads a tab-separated .tsv file whose cells hold commas and semicolons', async () => {
    expect((await ingested('animals.tsv')).split('\n')).toEqual([
      'species: Ursus arctos | common name: brown bear | habitat: forests, tundra | notes: omnivore, hibernates',
      'species: Lynx lynx | common name: Eurasian lynx | habitat: boreal forest | notes: solitary',
      'species: Castor fiber | common name: Eurasian beaver | habitat: rivers; lakes | notes: builds dams',
    ]);
  });

  it('keeps delimiters, escaped quotes and line breaks inside quoted fields', async () => {
    expect(await ingested('quoted-multiline.csv')).toBe(
      [
        'ticket: 4711 | customer: Okafor, Chidi | summary: Printer says "paper jam", but tray is empty; tried twice | status: open',
        'ticket: 4712 | customer: Lindqvist, Maja | summary: Cannot log in:\nerror 403, then a blank page | status: closed',
        'ticket: 4713 | customer: Ortega | summary: VPN drops every hour | status: open',
      ].join('\n'),
    );
  });

  it('finds a cell by its value in a search', async () => {
    const response = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, query: 'Kugelschreiber', mode: 'keyword' })
      .expect(200);
    expect(response.body.results[0]).toMatchObject({
      filename: 'semicolon-european.csv',
      content: expect.stringContaining('Bezeichnung: Kugelschreiber blau | Preis (EUR): 1,49'),
    });
  });
});
