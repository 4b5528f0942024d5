// The image-shape soak's workload: every request an image of another size, shared by the
// short version in the default suite (memory_shapes.test.mjs) and the long one
// (`scripts/soak.sh --profile shapes`).
//
// Each request is an /api/chat turn to a vision model that has a draft model, carrying one
// PNG of the next of `shapes` sizes (96x80 up to 1450x1080, cycled; the pixels differ on
// every request, so no two images are the same and none comes back from the prompt cache).
// Every other answer ends on a stop string, the others on num_predict. The images go through
// the whole path: base64, PNG decode, hashing, mtmd's preprocessing and the projector.
import { b64, png } from './images.mjs';
import { drain, readMemory, slope } from './soak_workload.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The answer's last byte leaves before the server has dropped everything of the request (the
// HTTP body, the job and its decoded pixels: up to ~6 MiB at the largest size), so a reading
// taken at once can count part of the request just answered. Readings 50 ms apart until RSS
// holds still (within 256 KiB), at most 6.
async function settledMemory(url) {
  let mem = await readMemory(url);
  for (let k = 0; k < 5; ++k) {
    await sleep(50);
    const next = await readMemory(url);
    if (Math.abs(next.resident_bytes - mem.resident_bytes) < 256 * 1024) return next;
    mem = next;
  }
  return mem;
}

export const SHAPE_SMALLEST = [96, 80];
export const SHAPE_LARGEST = [1450, 1080];

/** Size k of `shapes` sizes, evenly spaced from the smallest to the largest. */
export function shapeSize(k, shapes) {
  const t = shapes > 1 ? k / (shapes - 1) : 1;
  const lerp = (a, b) => Math.round(a + (b - a) * t);
  return [lerp(SHAPE_SMALLEST[0], SHAPE_LARGEST[0]), lerp(SHAPE_SMALLEST[1], SHAPE_LARGEST[1])];
}

/** Whether request i is meant to end on its stop string (every other one). */
export const shapesStopped = (i) => i % 2 === 0;

/** The body of request i for the ollama client's chat(). */
export function shapesRequest(i, model, shapes) {
  const [width, height] = shapeSize(i % shapes, shapes);
  // A stop string the random-weight fixtures produce within a few tokens; the length-ended
  // requests stop sooner than that could matter.
  const options = shapesStopped(i)
    ? { temperature: 0, num_predict: 64, stop: ['e', 'a'] }
    : { temperature: 0, num_predict: 12 };
  return {
    model,
    stream: i % 4 >= 2,
    options,
    messages: [
      { role: 'system', content: 'You describe pictures in one short sentence.' },
      { role: 'user', content: `Picture ${i}, ${width} by ${height}: what is in it?`, images: [b64(png(width, height, i))] },
    ],
  };
}

/**
 * Runs n requests one after another; after each, reads /api/debug/memory (settled) and calls
 * onSample(i, memory, final). Returns the samples: {rss, cache, allocator, done_reason,
 * stopped_as_planned, drafted}.
 */
export async function runShapes({ client, url, model, n, shapes, onSample = () => {} }) {
  const samples = [];
  for (let i = 0; i < n; ++i) {
    let final;
    try {
      final = await drain(await client.chat(shapesRequest(i, model, shapes)));
    } catch (err) {
      throw new Error(`request ${i} (image ${shapeSize(i % shapes, shapes).join('x')}): ${err.message}`);
    }
    if (!final || final.done !== true) throw new Error(`request ${i}: no final response`);
    const mem = await settledMemory(url);
    samples.push({
      rss: mem.resident_bytes,
      cache: mem.prompt_cache.bytes,
      allocator: mem.allocator,
      done_reason: final.done_reason,
      stopped_as_planned: !shapesStopped(i) || final.done_reason === 'stop',
      drafted: final.speculation?.drafted ?? 0,
    });
    await onSample(i, mem, final);
  }
  return samples;
}

const MiB = 1024 * 1024;

/** What a run of runShapes() shows: RSS minus the cache at checkpoints, slope, peak. */
export function summarizeShapes(samples, checkpointEvery) {
  const net = samples.map((s) => (s.rss - s.cache) / MiB);
  const half = Math.floor(samples.length / 2);
  // The allocator's own counts beside RSS, where the server reports them (MiB).
  const point = (i) => {
    const a = samples[i].allocator ?? {};
    const mib = (v) => (v === undefined ? undefined : v / MiB);
    return { request: i + 1, net_mib: net[i], allocated_mib: mib(a.allocated_bytes), free_mib: mib(a.free_bytes),
      mapped_mib: mib(a.mapped_bytes), resident_mib: mib(a.resident_bytes) };
  };
  const checkpoints = [point(0)];
  for (let i = checkpointEvery; i <= samples.length; i += checkpointEvery) checkpoints.push(point(i - 1));
  const reasons = {};
  for (const s of samples) reasons[s.done_reason] = (reasons[s.done_reason] ?? 0) + 1;
  return {
    net_mib: net, // every request's reading
    checkpoints,
    // Least-squares slopes over the second half (requests half+1 .. n) and over the whole run.
    slope_mib_per_request: slope(net.slice(half)),
    slope_all_mib_per_request: slope(net),
    peak_rss_mib: Math.max(...samples.map((s) => s.rss)) / MiB,
    peak_net_mib: Math.max(...net),
    cache_max_mib: Math.max(...samples.map((s) => s.cache)) / MiB,
    done_reasons: reasons,
    // The workload is what it says only if every stop-string request did stop (the others end
    // on num_predict, or now and then on an end-of-generation token).
    stop_missed: samples.filter((s) => !s.stopped_as_planned).length,
    drafted: samples.reduce((a, s) => a + s.drafted, 0),
  };
}
