// Servers that take turns. On the 2-core bench machine two servers up at once are not
// comparable: two copies of the same specd binary, both up and visited in turn, measured
// 1.15x-1.25x apart, the one started second faster, while one at a time they measured
// 0.99x-1.00x (bench/allocator.mjs --one-at-a-time). So by default each server runs alone:
// started afresh for its turn in every run, warmed up, measured, stopped. `together` keeps
// every server up for the whole run instead (faster, for smoke runs; its ratios carry that
// bias and a report made with it says so).
//
// A group is one server process (engines that share a server are one group). `visit(run, fn)`
// calls `fn(index, server, fresh)` for every group, in an order that rotates from run to run
// (no group always follows the same other one); `fresh` is true on a server's first turn
// after its start, when the caller warms it up.
export function turns(starters, { together = false } = {}) {
  const up = new Map(); // index -> server, in `together` mode
  // What each group's server reported at its starts (specd: the thread counts it measured).
  const starts = starters.map(() => []);
  async function open(i) {
    const s = await starters[i]();
    starts[i].push(s);
    return s;
  }
  return {
    together,
    starts,
    async visit(run, fn) {
      for (let k = 0; k < starters.length; ++k) {
        const i = (k + run) % starters.length;
        let server = up.get(i);
        const fresh = server === undefined;
        if (fresh) server = await open(i);
        try {
          await fn(i, server, fresh);
        } finally {
          if (together) up.set(i, server);
          else await server.stop();
        }
      }
    },
    async close() {
      for (const s of up.values()) await s.stop();
      up.clear();
    },
  };
}

// The thread counts a group's specd servers chose at their starts, for the report: one
// choice, or each distinct one with how many starts chose it.
export function threadChoices(servers) {
  const counts = new Map();
  for (const s of servers) {
    if (!s.threads) continue;
    const key = JSON.stringify(s.threads);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  if (counts.size === 0) return '';
  if (counts.size === 1) return `  -> threads ${[...counts.keys()][0]}`;
  return `  -> threads ${[...counts].map(([k, n]) => `${k} (${n} of ${servers.length} starts)`).join(', ')}`;
}

// The sentence a report gives about how its servers ran.
export function turnsSentence(together) {
  return together
    ? 'All servers were up at once (`--together`): on this machine that alone moved the same binary 1.15x-1.25x ' +
      'by start order, so these ratios carry that bias.'
    : 'One server runs at a time: each is started afresh for its turn in every run, warmed up, measured and ' +
      'stopped, the order rotating from run to run (two servers up at once measured the same binary 1.15x-1.25x ' +
      'apart on this machine, bench/results/allocator.md).';
}
