import { attachmentDisposition, downloadName, downloadType } from 'src/modules/documents/download-headers.js';

describe('attachmentDisposition', () => {
  it('gives an ASCII name as it is, in both parameters', () => {
    expect(attachmentDisposition('report-2024.pdf')).toBe(
      `attachment; filename="report-2024.pdf"; filename*=UTF-8''report-2024.pdf`,
    );
  });

  it('percent-encodes the UTF-8 of other characters in filename*, and those attr-char leaves out', () => {
    expect(attachmentDisposition("Résumé (final) it's 100%.pdf")).toBe(
      `attachment; filename="R_sum_ (final) it's 100_.pdf"; ` +
        `filename*=UTF-8''R%C3%A9sum%C3%A9%20%28final%29%20it%27s%20100%25.pdf`,
    );
  });

  it('keeps quotes, backslashes and line breaks out of the quoted name', () => {
    const header = attachmentDisposition('a"b\\c\r\nd😀.txt');
    expect(header).toBe(
      `attachment; filename="a_b_c__d_.txt"; filename*=UTF-8''a%22b%5Cc%0D%0Ad%F0%9F%98%80.txt`,
    );
    expect(decodeURIComponent(header.split("UTF-8''")[1])).toBe('a"b\\c\r\nd😀.txt');
  });
});

describe('downloadName and downloadType', () => {
  it('names text sent as JSON by its id, as UTF-8 text', () => {
    const text = { id: 'doc_1', filename: null, mediaType: 'text/plain' };
    expect(downloadName(text)).toBe('doc_1.txt');
    expect(downloadType(text)).toBe('text/plain; charset=utf-8');
  });

  it('gives a file its own name and stored media type', () => {
    const file = { id: 'doc_2', filename: 'paper.pdf', mediaType: 'application/pdf' };
    expect(downloadName(file)).toBe('paper.pdf');
    expect(downloadType(file)).toBe('application/pdf');
  });
});
