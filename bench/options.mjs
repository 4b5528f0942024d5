// Command-line options of the benchmark scripts: `--name value` pairs.
const argv = process.argv.slice(2);

/** The value after `--name`, or `fallback` when it is absent. */
export function option(name, fallback) {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : fallback;
}
