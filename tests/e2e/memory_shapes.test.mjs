// Memory under image-shape variety, the short version of `scripts/soak.sh --profile shapes`:
// /api/chat requests to a vision model with a draft, each with an image of the next of 30
// sizes (96x80 .. 1450x1080, twice), every other answer stop-terminated, prompt cache on.
// Every request must leave the ledger clean, and resident memory not held by the prompt
// cache must plateau at once: bounded least-squares slopes over the whole run and over its
// second half (requests 31-60).
//
// The bound, from 3 runs each of this workload on 2 cores (MiB/request, whole run / second
// half): with glibc's mmap threshold fixed (docs/memory.md) -0.0004 .. 0.0011 / 0.0006 ..
// 0.0027 cache off, 0.0112 .. 0.0145 / 0.0120 .. 0.0130 cache on; glibc left to itself
// 0.43 .. 0.54 / 0.0015 .. 0.18 cache off, 0.41 .. 0.52 / -0.06 .. -0.016 cache on. In so
// short a run glibc grows while it meets the sizes for the first time (87 -> 111..120 MiB),
// so the whole-run slope is what catches it, and the second half's guards the plateau.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { fixture, startServer, test } from './harness.mjs';
import { runShapes, summarizeShapes } from './shapes_workload.mjs';
import { ledgerViolations, readMemory } from './soak_workload.mjs';

const REQUESTS = 60;
const SHAPES = 30;
const SLOPE_BOUND_MIB = 0.1; // MiB per request

const visModel = {
  name: 'vis',
  from: 'vision-text.gguf',
  lines: [`FROM ${fixture('vision-mmproj.gguf')}`, `DRAFT ${fixture('pair-draft.gguf')}`],
};

describe('memory under image-shape variety', () => {
  test(`${REQUESTS} requests over ${SHAPES} image sizes: RSS minus the prompt cache plateaus at once`, async (t) => {
    const srv = await startServer({ models: [visModel] });
    try {
      const { allocator } = await readMemory(srv.url);
      // A sanitizer's allocator holds freed memory in a quarantine on purpose: there the
      // run checks the ledger and the answers only, in fewer requests.
      const sanitizer = allocator.name === 'sanitizer';
      const problems = [];
      const samples = await runShapes({
        client: srv.client, url: srv.url, model: 'vis', n: sanitizer ? SHAPES : REQUESTS, shapes: SHAPES,
        onSample: (i, mem) => {
          for (const p of ledgerViolations(mem)) problems.push(`after request ${i}: ${p}`);
        },
      });
      assert.deepEqual(problems, []);
      const s = summarizeShapes(samples, 10);
      assert.equal(s.stop_missed, 0, `every stop-string request ends on its stop string: ${JSON.stringify(s.done_reasons)}`);
      const table = s.checkpoints.map((c) => `@${c.request}: ${c.net_mib.toFixed(1)} MiB` +
        (c.allocated_mib === undefined ? '' : ` (allocated ${c.allocated_mib.toFixed(1)}, free ${c.free_mib.toFixed(1)})`));
      const slopes = `${s.slope_all_mib_per_request.toFixed(4)} over the run, ${s.slope_mib_per_request.toFixed(4)} over its second half`;
      t.diagnostic(`${allocator.name}: RSS minus cache ${table.join(', ')}; MiB/request ${slopes}`);
      if (sanitizer) return;
      assert.ok(s.slope_all_mib_per_request <= SLOPE_BOUND_MIB && s.slope_mib_per_request <= SLOPE_BOUND_MIB,
        `RSS minus the prompt cache grows (MiB/request) ${slopes}; bound ${SLOPE_BOUND_MIB}: ${table.join(', ')}`);
    } finally {
      await srv.stop();
    }
  });
});
