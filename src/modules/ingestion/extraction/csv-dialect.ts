/** The delimiters a CSV file may use, in the order preferred when two fit equally well. */
export const CSV_DELIMITERS = [',', ';', '\t', '|'] as const;

export type CsvDelimiter = (typeof CSV_DELIMITERS)[number];

/** How much of a file the sniffer reads: enough records to judge, never the whole of a large file. */
const SAMPLE_CHARACTERS = 64 * 1024;
const SAMPLE_RECORDS = 50;

/**
 * The delimiter of a CSV file, judged from its first records as Python's `csv.Sniffer` and papaparse
 * do: the candidate that occurs in the header and as often in (nearly) every record after it, counted
 * outside double-quoted fields. Spreadsheets in most European locales write `;` (the comma being their
 * decimal mark); `.tsv` files use tabs. When no candidate fits, or the file has no delimiter at all,
 * it is comma.
 */
export function sniffDelimiter(text: string): CsvDelimiter {
  const records = recordCounts(text.slice(0, SAMPLE_CHARACTERS), text.length > SAMPLE_CHARACTERS);
  if (records.length === 0) return ',';
  const [header, ...rest] = records;
  let best: { delimiter: CsvDelimiter; fit: number; columns: number } | null = null;
  for (const delimiter of CSV_DELIMITERS) {
    const columns = header[delimiter];
    if (columns === 0) continue;
    // The share of records with the header's count: ragged rows are allowed, a varying count is not.
    const fit =
      rest.length === 0 ? 1 : rest.filter((counts) => counts[delimiter] === columns).length / rest.length;
    if (fit < 0.9 && rest.length > 0) continue;
    if (!best || fit > best.fit || (fit === best.fit && columns > best.columns))
      best = { delimiter, fit, columns };
  }
  return best?.delimiter ?? ',';
}

type Counts = Record<CsvDelimiter, number>;

/**
 * Each record's count of each candidate, outside double quotes (a quoted field may hold delimiters and
 * line breaks). Blank lines are skipped; the last record is left out when the sample cut it short.
 */
function recordCounts(sample: string, truncated: boolean): Counts[] {
  const records: Counts[] = [];
  let counts = emptyCounts();
  let visible = false;
  let quoted = false;
  const end = () => {
    if (visible) records.push(counts);
    counts = emptyCounts();
    visible = false;
  };
  for (let i = 0; i < sample.length && records.length < SAMPLE_RECORDS; i++) {
    const char = sample[i];
    if (char === '"') {
      // `""` inside a quoted field is a quote character; either way the state flips back and forth.
      quoted = !quoted;
      visible = true;
    } else if (quoted) {
      continue;
    } else if (char === '\n' || char === '\r') {
      end();
    } else if (char in counts) {
      counts[char as CsvDelimiter]++;
      visible = true;
    } else if (char !== ' ') {
      visible = true;
    }
  }
  if (!truncated && records.length < SAMPLE_RECORDS) end();
  return records;
}

function emptyCounts(): Counts {
  return { ',': 0, ';': 0, '\t': 0, '|': 0 };
}
