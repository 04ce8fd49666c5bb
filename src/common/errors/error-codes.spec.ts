import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_ERROR_CODES } from 'src/common/errors/error-codes.js';

/** The codes the Errors table of docs/decisions.md lists (its second column). */
function documentedCodes(): string[] {
  const decisions = readFileSync(join(process.cwd(), 'docs', 'decisions.md'), 'utf8');
  const section = decisions.slice(decisions.indexOf('\n## Errors\n')).split(/\n## /)[1];
  return section
    .split('\n')
    .filter((line) => /^\| \d{3} \|/.test(line))
    .flatMap((line) => [...line.split('|')[2].matchAll(/`([a-z_]+)`/g)].map((match) => match[1]));
}

describe('the error codes', () => {
  it('are each documented once in docs/decisions.md, and only those', () => {
    const documented = documentedCodes();
    expect(documented.filter((code, i) => documented.indexOf(code) !== i)).toEqual([]);
    expect([...documented].sort()).toEqual([...API_ERROR_CODES].sort());
  });
});
