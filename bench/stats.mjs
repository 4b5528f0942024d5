// The summaries every benchmark report gives of repeated measurements.

/** The middle value; with an even count the mean of the two middle ones (the upper one alone,
 *  which the reports before 2026-12-07 gave, reads high: 6 wave pairs of 0.97-1.11 gave 1.10
 *  where the two middle ones were 1.08 and 1.10). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** [lowest, highest]. */
export const range = (xs) => [Math.min(...xs), Math.max(...xs)];
