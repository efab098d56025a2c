import Foundation
import TestSupport

/// Debian's `chromium` (installed by scripts/bootstrap), run headless on a report: its DOM after layout, the page's
/// width as laid out at a phone's width, and a screenshot. A missing browser is an error, never a skipped test.
struct HeadlessChromium {
    let executable: URL
    let profile = TemporaryDirectory("adapt-chromium")

    struct Missing: Error, CustomStringConvertible {
        var description: String { "chromium is not installed; scripts/bootstrap installs it (apt-get install chromium)" }
    }

    init() throws {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let found = path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("chromium") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
        guard let found else { throw Missing() }
        executable = found
    }

    /// The DOM Chromium built from `page` at `width` CSS pixels.
    func dom(_ page: URL, width: Int = 390) throws -> String {
        try run(["--dump-dom", "--window-size=\(width),900", page.absoluteString]).stdout
    }

    /// The page as a phone of `width` CSS pixels lays it out: desktop Chromium will not make a window narrower than
    /// 500 pixels, so a copy of the page gets `html { width: WIDTH px }` (the page's CSS has no width-dependent rule
    /// that this would bypass), with its script ban lifted for one line of script that writes onto the body how far
    /// right any element reaches and the body's scroll width, read back from the dumped DOM.
    func phoneCopy(_ page: URL, width: Int) throws -> URL {
        var html = try String(contentsOf: page, encoding: .utf8)
        html = html.replacingOccurrences(of: #"<meta http-equiv="Content-Security-Policy""#, with: #"<meta name="removed-csp""#)
        html = html.replacingOccurrences(of: "</head>", with: "<style>html{width:\(width)px}</style></head>")
        html = html.replacingOccurrences(of: "</body>", with: """
            <script>var right = 0; for (const e of document.querySelectorAll('body *')) right = Math.max(right, e.getBoundingClientRect().right);
            document.body.setAttribute('data-max-right', Math.ceil(right));
            document.body.setAttribute('data-scroll-width', document.body.scrollWidth);</script></body>
            """)
        let copy = profile.file("phone-\(UUID().uuidString.prefix(6)).html")
        try html.write(to: copy, atomically: true, encoding: .utf8)
        return copy
    }

    /// How far right anything on the page reaches, and the body's scroll width, at a phone's `width`.
    func layoutWidths(_ page: URL, width: Int = 390) throws -> (maxRight: Int, scroll: Int) {
        let dom = try run(["--dump-dom", "--window-size=800,900", try phoneCopy(page, width: width).absoluteString]).stdout
        func attribute(_ name: String) -> Int? {
            guard let range = dom.range(of: "\(name)=\"") else { return nil }
            return Int(dom[range.upperBound...].prefix { $0.isNumber })
        }
        guard let right = attribute("data-max-right"), let scroll = attribute("data-scroll-width") else {
            throw Failed(what: "the measuring script wrote no widths", output: String(dom.prefix(400)))
        }
        return (right, scroll)
    }

    /// A PNG of the page laid out at a phone's `width` (`phoneCopy`), `height` pixels tall.
    func screenshot(_ page: URL, width: Int = 390, height: Int = 1600) throws -> URL {
        let png = profile.file("shot-\(UUID().uuidString.prefix(6)).png")
        _ = try run(["--screenshot=\(png.path)", "--window-size=\(width),\(height)", try phoneCopy(page, width: width).absoluteString])
        guard FileManager.default.fileExists(atPath: png.path) else { throw Failed(what: "no screenshot was written", output: "") }
        return png
    }

    struct Failed: Error, CustomStringConvertible {
        let what: String
        let output: String
        var description: String { "chromium: \(what): \(output)" }
    }

    private func run(_ arguments: [String]) throws -> ProcessResult {
        // --no-sandbox: the tests may run as root, where Chromium refuses its sandbox; the page has no script anyway.
        let result = try Executables.run(executableAt: executable, [
            "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run", "--mute-audio",
            "--user-data-dir=\(profile.path)", "--force-device-scale-factor=1",
        ] + arguments)
        guard result.status == 0 else { throw Failed(what: "exit \(result.status)", output: String(result.stderr.suffix(600))) }
        return result
    }
}

/// What a screenshot shows, decoded by Python's standard library (zlib and the PNG filters): how much of it is not
/// background, and whether anything touches its right edge (where a page wider than the screen is cut off).
struct ScreenshotStatistics: Decodable {
    let width: Int
    let height: Int
    /// Share of pixels that differ from white.
    let inked: Double
    /// Pixels in the rightmost 3 columns that differ from white.
    let rightEdgeInk: Int
    /// Distinct colours (capped), to tell a drawing from a flat fill.
    let colours: Int

    static func of(_ png: URL) throws -> ScreenshotStatistics {
        let result = try Executables.run(executableAt: URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, png.path])
        guard result.status == 0 else { throw HeadlessChromium.Failed(what: "python3 could not read the screenshot", output: result.stderr) }
        return try JSONDecoder().decode(ScreenshotStatistics.self, from: Data(result.stdout.utf8))
    }

    static let script = #"""
    import json, struct, sys, zlib
    data = open(sys.argv[1], 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    pos, idat, width = 8, b'', 0
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            width, height, depth, ctype = struct.unpack('>IIBB', body[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line); prev = line
    inked, edge, colours = 0, 0, set()
    for line in rows:
        for x in range(width):
            px = tuple(line[x * bpp:x * bpp + 3])
            if px != (255, 255, 255):
                inked += 1
                if x >= width - 3: edge += 1
            if len(colours) < 1000: colours.add(px)
    print(json.dumps({"width": width, "height": height, "inked": inked / float(width * height), "rightEdgeInk": edge, "colours": len(colours)}))
    """#
}

/// Counting in a dumped DOM.
enum DOMCount {
    /// Elements whose class attribute starts with `prefix` (`bar`, `pair `).
    static func elements(_ dom: String, classPrefix prefix: String) -> Int {
        dom.components(separatedBy: "class=\"\(prefix)").count - 1
    }

    /// The coordinate pairs in the `points` of the polyline whose class is `name`.
    static func polylinePoints(_ dom: String, class name: String) -> Int? {
        guard let start = dom.range(of: "class=\"\(name)\"") else { return nil }
        let rest = dom[start.upperBound...]
        guard let points = rest.range(of: " points=\"") else { return nil }
        let value = rest[points.upperBound...].prefix { $0 != "\"" }
        return value.split(separator: " ").count
    }
}
