import { sniffDelimiter } from 'src/modules/ingestion/extraction/csv-dialect.js';

describe('sniffDelimiter', () => {
  it.each([
    ['comma', 'Team,Cups,City\nMaple Leafs,13,Toronto\nCanadiens,24,Montreal\n', ','],
    // The decimal comma of most European locales does not make it comma-separated.
    ['semicolon with decimal commas', 'Produkt;Preis;Menge\nÄpfel;1,50;3\nBirnen;2,25;10\n', ';'],
    ['tab', 'name\tdescription\nalpha\tfirst, of all\nbeta\tsecond, then\n', '\t'],
    ['pipe', 'id|label\n1|one\n2|two\n', '|'],
    // Delimiters inside quotes, even across lines, are part of their field.
    ['quoted semicolons', 'a,b\n"x;y;z",1\n"p;\nq",2\n', ','],
    ['quoted commas in a semicolon file', 'Name;Note\n"Smith, J.";"late, again"\nDoe;"ok, fine"\n', ';'],
    ['CRLF line ends', 'a;b;c\r\n1;2;3\r\n4;5;6\r\n', ';'],
    ['a header alone', 'first;second;third\n', ';'],
    ['no delimiter at all', 'one column\nvalue\n', ','],
    ['an empty file', '', ','],
  ])('reads %s', (_, text, delimiter) => {
    expect(sniffDelimiter(text)).toBe(delimiter);
  });

  it('prefers the delimiter every row agrees on over one that merely occurs more', () => {
    // Commas vary row to row (free text); the semicolon count holds.
    const text = 'title;body\nA;one, two, three\nB;four\nC;five, six\n';
    expect(sniffDelimiter(text)).toBe(';');
  });

  it('allows a few ragged rows', () => {
    const rows = Array.from({ length: 30 }, (_, i) => (i === 7 ? `${i};x` : `${i};x;y`));
    expect(sniffDelimiter(['a;b;c', ...rows].join('\n'))).toBe(';');
  });

  it('judges from the first records of a large file', () => {
    const text = `a;b\n${'1;2\n'.repeat(100_000)}`;
    expect(sniffDelimiter(text)).toBe(';');
  });
});
