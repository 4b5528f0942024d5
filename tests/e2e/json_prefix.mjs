// A JSON prefix checker for answers cut by num_predict.

/**
 * True when `text` can be extended to a valid JSON document (every complete JSON text is
 * also a prefix). A small recursive-descent parser where running out of input is success.
 */
export function isJsonPrefix(text) {
  const EOF = Symbol('eof');
  let i = 0;
  const peek = () => {
    if (i >= text.length) throw EOF;
    return text[i];
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const expect = (word) => {
    for (const ch of word) {
      if (peek() !== ch) throw new SyntaxError(`expected ${word} at ${i}`);
      i++;
    }
  };
  const string = () => {
    expect('"');
    for (;;) {
      const c = peek();
      i++;
      if (c === '"') return;
      if (c === '\\') {
        const e = peek();
        i++;
        if (e === 'u') {
          for (let k = 0; k < 4; k++) {
            if (!/[0-9a-fA-F]/.test(peek())) throw new SyntaxError(`bad \\u escape at ${i}`);
            i++;
          }
        } else if (!'"\\/bfnrt'.includes(e)) throw new SyntaxError(`bad escape \\${e} at ${i}`);
      } else if (c < ' ') throw new SyntaxError(`control character in string at ${i - 1}`);
    }
  };
  const number = () => {
    const m = /^-?(0|[1-9][0-9]*)?(\.[0-9]*)?([eE][+-]?[0-9]*)?/.exec(text.slice(i));
    if (!m || m[0] === '' || m[0] === '-') {
      if (m && m[0] === '-' && i + 1 >= text.length) throw EOF;
      throw new SyntaxError(`bad number at ${i}`);
    }
    const atEnd = i + m[0].length >= text.length;
    // A number that stops at the end of the input may still grow; one that stops before
    // must be complete.
    if (!atEnd && !/^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(m[0])) {
      throw new SyntaxError(`incomplete number at ${i}`);
    }
    i += m[0].length;
    if (atEnd) throw EOF;
  };
  const value = () => {
    ws();
    const c = peek();
    if (c === '{') {
      i++;
      ws();
      if (peek() === '}') return void i++;
      for (;;) {
        ws();
        string();
        ws();
        expect(':');
        value();
        ws();
        const d = peek();
        i++;
        if (d === '}') return;
        if (d !== ',') throw new SyntaxError(`expected , or } at ${i - 1}`);
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (peek() === ']') return void i++;
      for (;;) {
        value();
        ws();
        const d = peek();
        i++;
        if (d === ']') return;
        if (d !== ',') throw new SyntaxError(`expected , or ] at ${i - 1}`);
      }
    }
    if (c === '"') return string();
    if (c === 't') return expect('true');
    if (c === 'f') return expect('false');
    if (c === 'n') return expect('null');
    return number();
  };
  try {
    value();
    ws();
    return i === text.length;
  } catch (e) {
    if (e === EOF) return true;
    return false;
  }
}
