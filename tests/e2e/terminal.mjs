// A terminal for the CLI tests: a private tmux server (its own socket) running one command in
// a window of a given size, typed into as a person types (send-keys) and read back from the
// screen (capture-pane). Every wait is bounded. tmux comes from Debian (scripts/setup.sh).
import { execFile } from 'node:child_process';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function tmux(socket, args) {
  return new Promise((resolve, reject) => {
    execFile('tmux', ['-S', socket, ...args], { timeout: 10_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`tmux ${args.join(' ')}: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

/**
 * Starts `argv` in a fresh tmux server with the given environment (added to this process's)
 * in a window of width x height.
 */
export async function startTerminal(argv, { env = {}, width = 100, height = 50 } = {}) {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'specd-e2e-tty-'));
  const socket = path.join(dir, 'tmux.sock');
  const conf = path.join(dir, 'tmux.conf');
  // The pane stays after the command exits, so its last screen can be read.
  await fsp.writeFile(conf, 'set -g remain-on-exit on\nset -g history-limit 10000\nset -g status off\n');
  const quote = (a) => `'${a.replace(/'/g, `'\\''`)}'`;
  // The shell around the command records its exit status: tmux's own (pane_dead_status)
  // was seen missing when tmux had not reaped the process.
  const statusFile = path.join(dir, 'status');
  const command = `${argv.map(quote).join(' ')}; echo $? > ${quote(statusFile)}`;
  await new Promise((resolve, reject) => {
    execFile('tmux', ['-S', socket, '-f', conf, 'new-session', '-d', '-x', String(width), '-y', String(height), command],
      { env: { ...process.env, ...env }, timeout: 10_000 },
      (err, _out, stderr) => (err ? reject(new Error(`tmux new-session: ${stderr || err.message}`)) : resolve()));
  });

  const term = {
    dir,
    /** The screen and its scrollback as text; wrapped lines joined (what was printed as one line). */
    async screen({ joined = true, escapes = false } = {}) {
      const args = ['capture-pane', '-p', '-S', '-', ...(joined ? ['-J'] : []), ...(escapes ? ['-e'] : [])];
      // remain-on-exit's own line is tmux's, not the program's.
      return (await tmux(socket, args)).replace(/^Pane is dead \(.*\n?/m, '');
    },
    /** Types text literally (no key names). */
    async type(text) {
      await tmux(socket, ['send-keys', '-l', text]);
    },
    /** Presses keys by tmux name: Enter, Up, Left, BSpace, C-a, C-c, C-d, ... */
    async press(...keys) {
      for (const k of keys) await tmux(socket, ['send-keys', k]);
    },
    /** Types a line and presses Enter. */
    async line(text) {
      await term.type(text);
      await term.press('Enter');
    },
    /**
     * Waits until the screen matches `re` (a RegExp, or a function of the screen text)
     * `count` times; returns the screen. Throws with the screen after timeoutMs.
     */
    async waitFor(re, { timeoutMs = 20_000, count = 1, ...opts } = {}) {
      const deadline = Date.now() + timeoutMs;
      let text = '';
      for (;;) {
        text = await term.screen(opts);
        const n = typeof re === 'function' ? (re(text) ? count : 0)
          : (text.match(new RegExp(re.source, re.flags.includes('g') ? re.flags : re.flags + 'g')) ?? []).length;
        if (n >= count) return text;
        if (Date.now() > deadline) throw new Error(`terminal: no ${re} (x${count}) within ${timeoutMs} ms; screen:\n${text}`);
        await sleep(100);
      }
    },
    /** The command's exit status once it has exited, else null. */
    async status() {
      const text = await fsp.readFile(statusFile, 'utf8').catch(() => '');
      return text.endsWith('\n') ? Number(text) : null;
    },
    /** Waits for the command to exit; returns its exit status. */
    async exited({ timeoutMs = 60_000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const status = await term.status();
        if (status !== null) return status;
        if (Date.now() > deadline) throw new Error(`terminal: not exited after ${timeoutMs} ms; screen:\n${await term.screen()}`);
        await sleep(100);
      }
    },
    async close() {
      await tmux(socket, ['kill-server']).catch(() => {});
      await fsp.rm(dir, { recursive: true, force: true });
    },
  };
  return term;
}
