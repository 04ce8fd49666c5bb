import {
  type Calibration,
  calibrated,
  DEFAULT_SEMANTIC_CALIBRATION,
  keywordRelevance,
  SEMANTIC_CALIBRATIONS,
  semanticCalibration,
} from 'src/modules/search/relevance.js';

describe('calibrated', () => {
  const points: Calibration = [
    [0.2, 0],
    [0.5, 0.5],
    [0.8, 0.9],
  ];

  it('joins the points by straight lines and is flat beyond the ends', () => {
    expect(calibrated(0.5, points)).toBe(0.5);
    expect(calibrated(0.35, points)).toBeCloseTo(0.25);
    expect(calibrated(0.65, points)).toBeCloseTo(0.7);
    expect(calibrated(-1, points)).toBe(0);
    expect(calibrated(0.95, points)).toBe(0.9);
    expect(calibrated(NaN, points)).toBe(0);
  });
});

describe('keywordRelevance', () => {
  it('is 0 without a ceiling and rises with the share of it, to 1 at the ceiling of a long query', () => {
    expect(keywordRelevance(3, 0, 2)).toBe(0);
    const shares = [0, 0.1, 0.2, 0.3, 0.45, 0.7, 1].map((share) => keywordRelevance(10 * share, 10, 9));
    expect(shares).toEqual([...shares].sort((a, b) => a - b));
    expect(shares[0]).toBe(0);
    expect(shares[shares.length - 1]).toBe(1);
  });

  it('asks a larger share of a short query than of a long one for the same relevance', () => {
    expect(keywordRelevance(4, 10, 1)).toBeLessThan(keywordRelevance(4, 10, 4));
    expect(keywordRelevance(4, 10, 4)).toBeLessThan(keywordRelevance(4, 10, 9));
    // One word held at saturation is at most moderate evidence (docs/search.md gives the figures).
    expect(keywordRelevance(10, 10, 1)).toBeCloseTo(0.5 + (0.2 * 0.25) / 0.45, 12);
    const once = 1 / 2.2; // each word once, in a chunk of average length (k1 1.2)
    expect(keywordRelevance(once * 10, 10, 2)).toBeCloseTo(0.43, 2);
    expect(keywordRelevance(once * 10, 10, 3)).toBeCloseTo(0.52, 2);
    expect(keywordRelevance(once * 10, 10, 9)).toBeCloseTo(0.75, 2);
  });
});

describe('semanticCalibration', () => {
  it("takes the configured model's points, else the built-in ones, else the configured default, else the default", () => {
    const own: Calibration = [
      [0, 0],
      [1, 1],
    ];
    expect(semanticCalibration('text-embedding-3-small', { 'text-embedding-3-small': own })).toBe(own);
    expect(semanticCalibration('text-embedding-3-small', { '*': own })).toBe(
      SEMANTIC_CALIBRATIONS['text-embedding-3-small'],
    );
    expect(semanticCalibration('my-model', { '*': own })).toBe(own);
    expect(semanticCalibration('my-model', {})).toBe(DEFAULT_SEMANTIC_CALIBRATION);
    expect(semanticCalibration('constructor', {})).toBe(DEFAULT_SEMANTIC_CALIBRATION);
  });
});
