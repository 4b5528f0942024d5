// Command-line options of the benchmark scripts: `--name value` pairs.
const argv = process.argv.slice(2);

/** The value after the last `--name` (scripts/bench.sh passes its defaults first, so the
 *  caller's options win), or `fallback` when it is absent. */
export function option(name, fallback) {
  const i = argv.lastIndexOf(`--${name}`);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : fallback;
}
