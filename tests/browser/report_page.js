// Open a report page in headless Chromium (puppeteer-core + @sparticuz/chromium, installed by `make browser`) at a
// laptop's first screen (1280 x 800) and print what the browser shows, as one JSON line:
//   images:   for every <img>, [src, complete, naturalWidth] (whether the browser decoded it);
//   viewport, top, visible: the viewport's height, the top of the findings section and the findings' headings and
//             headlines that lie inside the first screen.
// With a second argument, a screenshot of that first screen is saved there.
const chromium = require('@sparticuz/chromium');
const puppeteer = require('puppeteer-core');

(async () => {
  const browser = await puppeteer.launch({
    args: chromium.args,
    executablePath: await chromium.executablePath(),
    headless: chromium.headless,
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 800 });
    await page.goto('file://' + process.argv[2], { waitUntil: 'load' });
    if (process.argv[3]) await page.screenshot({ path: process.argv[3] });
    const seen = await page.evaluate(() => {
      const height = window.innerHeight;
      const section = document.querySelector('#findings');
      const inside = (el) => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= height && r.height > 0; };
      return {
        images: Array.from(document.images).map((img) => [img.getAttribute('src'), img.complete, img.naturalWidth]),
        viewport: height,
        top: section ? section.getBoundingClientRect().top : null,
        visible: section ? Array.from(section.querySelectorAll('h2, h3, .headline, h4')).filter(inside).map((el) => el.innerText.trim()) : [],
      };
    });
    console.log(JSON.stringify(seen));
  } finally {
    await browser.close();
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
