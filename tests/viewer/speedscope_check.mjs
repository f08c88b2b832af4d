// Loads each trace or collapsed-stacks file into speedscope (the npm package's own build) in headless
// Chromium and checks what a person would see: the import logs no warning or error, and every thread
// of a trace is drawn (speedscope makes one profile per pid:tid with complete events; the toolbar
// shows "(i/n)" when there is more than one).
// Usage: node speedscope_check.mjs <dir holding node_modules> <file>...
// Prints one line per file, then "N passed, N failed"; exits 1 on any failure.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const [deps, ...files] = process.argv.slice(2);
if (!deps || files.length === 0) {
  console.error('usage: node speedscope_check.mjs <dir holding node_modules> <file>...');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(deps), 'node_modules', ''));
const { chromium } = require('playwright-core');
const speedscope = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist/release/index.html');
const executablePath = process.env.STINT_CHROMIUM || '/usr/bin/chromium';

// What a trace should show: one profile per thread named in the metadata, and each such thread has
// complete events to draw (a thread left out of either list is reported by name).
function expectedProfiles(file, text) {
  if (!/\.json$/.test(file)) return { count: 1, problems: [] };
  const trace = JSON.parse(text);
  const named = new Map();
  const drawn = new Set();
  for (const e of trace.traceEvents) {
    const key = `${e.pid}:${e.tid}`;
    if (e.ph === 'M' && e.name === 'thread_name') named.set(key, e.args.name);
    if (e.ph === 'X' || e.ph === 'B' || e.ph === 'E') drawn.add(key);
  }
  const problems = [];
  for (const [key, name] of named) if (!drawn.has(key)) problems.push(`thread ${name} (${key}) has no event to draw`);
  for (const key of drawn) if (!named.has(key)) problems.push(`events on ${key}, a thread with no thread_name`);
  return { count: named.size, problems };
}

// Chromium's own GPU driver notes (SwiftShader's "GPU stall due to ReadPixels") are not speedscope's.
const isBrowserNoise = text => /^\[\.WebGL-[0-9a-fx]+\]GL Driver Message/.test(text);

const browser = await chromium.launch({ executablePath, args: ['--allow-file-access-from-files'] });
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'stint-speedscope-'));
let passed = 0;
let failed = 0;
try {
  for (const file of files) {
    const text = fs.readFileSync(file);
    const name = path.basename(file);
    const { count: expected, problems } = expectedProfiles(file, text.toString('utf8'));
    // speedscope's command line hands a profile over the same way: a script calling loadFileFromBase64.
    const script = path.join(scratch, `${passed + failed}.js`);
    fs.writeFileSync(script, `speedscope.loadFileFromBase64(${JSON.stringify(name)}, ${JSON.stringify(text.toString('base64'))})`);
    const page = await browser.newPage();
    const complaints = [];
    let importer = '';
    page.on('console', m => {
      if (m.type() === 'log' && m.text().startsWith('Importing as ')) importer = m.text();
      if ((m.type() === 'warning' || m.type() === 'error') && !isBrowserNoise(m.text())) complaints.push(m.text());
    });
    page.on('pageerror', e => complaints.push(`page error: ${e.message}`));
    page.on('dialog', d => { complaints.push(`dialog: ${d.message()}`); d.dismiss(); });
    await page.goto(`file://${speedscope}#localProfilePath=${script}`);
    let profiles = 0;
    try {
      // The toolbar names the profile once the import has finished; "(i/n)" when there are several.
      await page.waitForFunction(() => document.body.innerText.includes('Time Order'), null, { timeout: 60000 });
      const title = await page.evaluate(() => document.body.innerText);
      const m = /\((\d+)\/(\d+)\)/.exec(title);
      profiles = m ? Number(m[2]) : 1;
    } catch (e) {
      complaints.push(`speedscope showed no profile: ${e.message.split('\n')[0]}`);
    }
    await page.close();
    const wrong = [...problems, ...complaints.slice(0, 3)];
    if (profiles !== expected) wrong.unshift(`${profiles} threads drawn, ${expected} in the trace's thread metadata`);
    if (complaints.length === 0 && wrong.length === 0) {
      ++passed;
      console.log(`ok ${name}: ${profiles} thread${profiles === 1 ? '' : 's'} drawn, 0 warnings (${importer})`);
    } else {
      ++failed;
      console.log(`FAIL ${name}: ${complaints.length} warnings or errors, ${profiles} threads drawn of ${expected}`);
      for (const w of wrong) console.log(`    ${w.length > 400 ? w.slice(0, 400) + '…' : w}`);
    }
  }
} finally {
  await browser.close();
  fs.rmSync(scratch, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
