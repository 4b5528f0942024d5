// Vision through the real server: a model made of a text model and a projector (two FROM
// lines, the projector found by its architecture on either line), images on generate and
// chat in order, the same image reusing the KV, images larger than the batch, 2 and 8 Mpx
// images, and the ledger's images bucket back at 0 after each request.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { fixture, test, useServer } from './harness.mjs';
import { b64, bmp, jpeg, png } from './images.mjs';
import { ledgerViolations, readMemory } from './soak_workload.mjs';

// The projector first: the store tells them apart by GGUF architecture, not by order.
const visModel = { name: 'vis', from: 'vision-mmproj.gguf', lines: [`FROM ${fixture('vision-text.gguf')}`] };
const IMAGE_TOKENS = 16; // every image of the fixture projector (docs in tests/make-fixtures.sh)
const greedy = (n, extra = {}) => ({ temperature: 0, num_predict: n, ...extra });

describe('vision', () => {
  const h = useServer({ models: [visModel, { name: 'tiny' }] });

  test('/api/show reports the vision capability and the projector', async () => {
    const show = await h.srv.client.show({ model: 'vis' });
    assert.ok(show.capabilities.includes('vision'));
    assert.equal(show.projector_info['general.architecture'], 'clip');
    assert.equal(show.projector_info['clip.projector_type'], 'gemma3');
    const tiny = await h.srv.client.show({ model: 'tiny' });
    assert.ok(!tiny.capabilities.includes('vision'));
  });

  test('generate: an image is evaluated once, then reused from the KV with the same answer', async () => {
    const { client, url } = h.srv;
    const image = b64(png(96, 64, 1));
    const body = { model: 'vis', prompt: 'What is in this picture?', images: [image], stream: false, options: greedy(12) };
    const first = await client.generate(body);
    assert.ok(first.prompt_eval_count > IMAGE_TOKENS, `${first.prompt_eval_count} evaluated`);
    assert.equal(first.vision.images, 1);
    assert.equal(first.vision.image_tokens, IMAGE_TOKENS);
    assert.ok(first.vision.encode_duration > 0 && first.vision.decode_duration > 0);
    const again = await client.generate(body);
    assert.equal(again.response, first.response);
    assert.equal(again.prompt_eval_count, 1);
    assert.equal(again.vision, undefined, 'a reused image is not evaluated again');
    // `context` holds text tokens only (an image has no token ids to send back).
    assert.ok(again.context.every((t) => Number.isInteger(t) && t >= 0));
    // The same pixels as BMP are the same image: the KV is reused again.
    const asBmp = await client.generate({ ...body, images: [b64(bmp(96, 64, 1))] });
    assert.equal(asBmp.response, first.response);
    assert.equal(asBmp.prompt_eval_count, 1);
    // Another image is evaluated from where it starts.
    const other = await client.generate({ ...body, images: [b64(png(96, 64, 2))] });
    assert.ok(other.prompt_eval_count > IMAGE_TOKENS);
    const mem = await readMemory(url);
    assert.deepEqual(ledgerViolations(mem), []);
    assert.equal(mem.buckets.images, 0);
  });

  test('chat: several images per message and per request, in order', async () => {
    const { client } = h.srv;
    const [a, b, c] = [png(40, 30, 3), png(30, 40, 4), png(50, 50, 5)].map(b64);
    const messages = [
      { role: 'user', content: 'Here are two pictures.', images: [a, b] },
      { role: 'assistant', content: 'I see them.' },
      { role: 'user', content: 'And a third: compare all three.', images: [c] },
    ];
    const r1 = await client.chat({ model: 'vis', messages, stream: false, options: greedy(10) });
    assert.equal(r1.done_reason, 'length');
    const withoutImages = messages.map(({ images, ...m }) => m);
    const r0 = await client.chat({ model: 'vis', messages: withoutImages, stream: false, options: greedy(10) });
    assert.ok(r1.prompt_eval_count >= r0.prompt_eval_count - 1 + 3 * IMAGE_TOKENS);
    // The images' order is part of the prompt: swapping two is another prompt from there.
    const swapped = structuredClone(messages);
    swapped[0].images = [b, a];
    const r2 = await client.chat({ model: 'vis', messages: swapped, stream: false, options: greedy(10) });
    assert.ok(r2.prompt_eval_count > 2 * IMAGE_TOKENS, `${r2.prompt_eval_count} evaluated after the swap`);
    // Streaming carries the same answer.
    let streamed = '';
    for await (const part of await client.chat({ model: 'vis', messages, stream: true, options: greedy(10) })) {
      streamed += part.message.content;
    }
    assert.equal(streamed, r1.message.content);
  });

  test('an image needs more tokens than num_batch: the batch grows, nothing aborts', async () => {
    const { client } = h.srv;
    const r = await client.generate({ model: 'vis', prompt: 'describe', images: [b64(png(64, 64, 6))], stream: false,
      options: greedy(4, { num_batch: 4 }) });
    assert.equal(r.eval_count, 4);
    assert.ok(r.prompt_eval_count > IMAGE_TOKENS);
  });

  test('2 Mpx and 8 Mpx images, and a JPEG', async () => {
    const { client } = h.srv;
    for (const [w, hgt] of [[1600, 1250], [3500, 2300]]) {
      const r = await client.generate({ model: 'vis', prompt: `a ${w}x${hgt} image`, images: [b64(png(w, hgt, 7))],
        stream: false, options: greedy(2) });
      assert.equal(r.eval_count, 2, `${w}x${hgt}`);
    }
    const r = await client.generate({ model: 'vis', prompt: 'grey', images: [b64(jpeg())], stream: false, options: greedy(2) });
    assert.equal(r.eval_count, 2);
    const mem = await readMemory(h.srv.url);
    assert.equal(mem.buckets.images, 0);
    assert.deepEqual(ledgerViolations(mem), []);
  });

  test('a model without a projector answers images with a 400', async () => {
    const r = await fetch(`${h.srv.url}/api/generate`, { method: 'POST',
      body: JSON.stringify({ model: 'tiny', prompt: 'hi', images: [b64(png(8, 8))], stream: false }) });
    assert.equal(r.status, 400);
    assert.match((await r.json()).error, /does not support images/);
  });
});
