// Opens each memory timeline page (stint::export_memory_timeline's .html) in headless Chromium and
// checks what a person would see: no console warning or error, no page error, and a plot that is
// drawn: a screenshot of the SVG is decoded (PNG, with node's zlib) and must hold the series' blue,
// the peak marker's red and enough non-white pixels to be a plot, not an empty frame.
// Usage: node memory_timeline_check.mjs <dir holding node_modules> <page.html>...
// Prints one line per page, then "N passed, N failed"; exits 1 on any failure.
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';

const [deps, ...pages] = process.argv.slice(2);
if (!deps || pages.length === 0) {
  console.error('usage: node memory_timeline_check.mjs <dir holding node_modules> <page.html>...');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(deps), 'node_modules', ''));
const { chromium } = require('playwright-core');
const executablePath = process.env.STINT_CHROMIUM || '/usr/bin/chromium';

// RGB(A) pixels of an 8-bit PNG (colour types 2 and 6, what Chromium writes), as [r, g, b] arrays.
function decodePng(png) {
  let width = 0, height = 0, channels = 0;
  const data = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const body = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      if (body[8] !== 8 || body[12] !== 0) throw new Error(`unsupported PNG: depth ${body[8]}, interlace ${body[12]}`);
      channels = { 2: 3, 6: 4 }[body[9]];
      if (!channels) throw new Error(`unsupported PNG colour type ${body[9]}`);
    } else if (type === 'IDAT') {
      data.push(body);
    }
    at += 12 + length;
  }
  const raw = zlib.inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; ++y) {
    const filter = raw[y * (stride + 1)];
    const row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; ++x) {
      const a = x >= channels ? out[y * stride + x - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels] : 0;
      let value = row[x];
      if (filter === 1) value += a;
      else if (filter === 2) value += b;
      else if (filter === 3) value += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        value += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else if (filter !== 0) throw new Error(`bad PNG filter ${filter}`);
      out[y * stride + x] = value & 0xff;
    }
  }
  const pixels = [];
  for (let i = 0; i < out.length; i += channels) pixels.push([out[i], out[i + 1], out[i + 2]]);
  return { width, height, pixels };
}

const near = (p, [r, g, b], slack = 40) => Math.abs(p[0] - r) + Math.abs(p[1] - g) + Math.abs(p[2] - b) <= slack;

const browser = await chromium.launch({ executablePath });
let passed = 0;
let failed = 0;
try {
  for (const file of pages) {
    const page = await browser.newPage({ viewport: { width: 1024, height: 800 } });
    const complaints = [];
    page.on('console', m => { if (m.type() === 'warning' || m.type() === 'error') complaints.push(m.text()); });
    page.on('pageerror', e => complaints.push(`page error: ${e.message}`));
    page.on('requestfailed', r => complaints.push(`request failed: ${r.url()}`));
    page.on('request', r => { if (!r.url().startsWith('file://')) complaints.push(`network request: ${r.url()}`); });
    const facts = [];
    try {
      await page.goto(`file://${path.resolve(file)}`);
      const plot = await page.$('#plot');
      if (!plot) throw new Error('no #plot element');
      const title = await page.title();
      const { width, height, pixels } = decodePng(await plot.screenshot());
      const inked = pixels.filter(p => !near(p, [255, 255, 255], 30)).length;
      const blue = pixels.filter(p => near(p, [0x1f, 0x4e, 0x9c])).length;
      const red = pixels.filter(p => near(p, [0xc0, 0x39, 0x2b])).length;
      facts.push(`${width}x${height}`, `${inked} non-white pixels`, `${blue} series`, `${red} peak`,
                 `title "${title}"`);
      if (inked < 0.02 * pixels.length) complaints.push(`only ${inked} of ${pixels.length} pixels are not white`);
      if (blue < 100) complaints.push(`the series line is missing (${blue} blue pixels)`);
      if (red < 20) complaints.push(`the peak marker is missing (${red} red pixels)`);
      if (!title.startsWith('Memory timeline: ')) complaints.push(`title "${title}"`);
    } catch (e) {
      complaints.push(`could not draw: ${e.message.split('\n')[0]}`);
    }
    await page.close();
    const name = path.basename(file);
    if (complaints.length === 0) {
      ++passed;
      console.log(`ok ${name}: ${facts.join(', ')}, 0 warnings`);
    } else {
      ++failed;
      console.log(`FAIL ${name}: ${facts.join(', ')}`);
      for (const c of complaints.slice(0, 5)) console.log(`    ${c.length > 400 ? c.slice(0, 400) + '…' : c}`);
    }
  }
} finally {
  await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
