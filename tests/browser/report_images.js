// Open a report page in headless Chromium (puppeteer-core + @sparticuz/chromium, installed by `make browser`)
// and print, for every <img>, whether the browser decoded it: [src, complete, naturalWidth].
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
    await page.goto('file://' + process.argv[2], { waitUntil: 'load' });
    const images = await page.evaluate(() =>
      Array.from(document.images).map((img) => [img.getAttribute('src'), img.complete, img.naturalWidth]));
    console.log(JSON.stringify(images));
  } finally {
    await browser.close();
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
