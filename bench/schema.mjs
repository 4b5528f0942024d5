// A small JSON Schema check for the benchmark's answers: the subset of keywords the cell
// file's schemas use, and an error for any other keyword, so that a schema can not ask for
// something this check would silently skip.
//   check(schema, text) -> null when text parses and matches, else the first mismatch.
const known = new Set(['type', 'properties', 'required', 'additionalProperties', 'items', 'minItems', 'maxItems',
                       'minLength', 'maxLength', 'minimum', 'maximum', 'enum', 'pattern']);

export function check(schema, text) {
  let value;
  try { value = JSON.parse(text); } catch (e) { return `not JSON: ${e.message}`; }
  return match(schema, value, '$');
}

const typeOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array'
  : Number.isInteger(v) ? 'integer' : typeof v);

function match(s, v, at) {
  for (const k of Object.keys(s)) if (!known.has(k)) throw new Error(`bench/schema.mjs: unsupported keyword "${k}" at ${at}`);
  const t = typeOf(v);
  if (s.type && !(s.type === t || (s.type === 'number' && t === 'integer'))) return `${at}: ${t}, expected ${s.type}`;
  if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) return `${at}: ${JSON.stringify(v)} not in enum`;
  if (typeof v === 'string') {
    const n = [...v].length; // code points, as JSON Schema counts
    if (s.minLength !== undefined && n < s.minLength) return `${at}: shorter than ${s.minLength}`;
    if (s.maxLength !== undefined && n > s.maxLength) return `${at}: longer than ${s.maxLength}`;
    if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(v)) return `${at}: does not match ${s.pattern}`;
  }
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < s.minimum) return `${at}: below ${s.minimum}`;
    if (s.maximum !== undefined && v > s.maximum) return `${at}: above ${s.maximum}`;
  }
  if (t === 'array') {
    if (s.minItems !== undefined && v.length < s.minItems) return `${at}: fewer than ${s.minItems} items`;
    if (s.maxItems !== undefined && v.length > s.maxItems) return `${at}: more than ${s.maxItems} items`;
    if (s.items) for (let i = 0; i < v.length; ++i) { const e = match(s.items, v[i], `${at}[${i}]`); if (e) return e; }
  }
  if (t === 'object') {
    for (const k of s.required ?? []) if (!(k in v)) return `${at}: missing "${k}"`;
    for (const [k, x] of Object.entries(v)) {
      const sub = s.properties?.[k];
      if (sub) { const e = match(sub, x, `${at}.${k}`); if (e) return e; }
      else if (s.additionalProperties === false) return `${at}: unexpected "${k}"`;
    }
  }
  return null;
}
