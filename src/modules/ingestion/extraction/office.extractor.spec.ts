const builtins = () => ({ parse: JSON.parse, push: Array.prototype.push });

describe('office extractor', () => {
  it('leaves JavaScript builtins alone until a PDF is read (pdf.js polyfills them process-wide)', async () => {
    const before = builtins();
    await import('src/modules/ingestion/extraction/office.extractor.js');
    expect(builtins()).toEqual(before);
  });
});
