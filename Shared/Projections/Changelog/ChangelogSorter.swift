import Foundation
import Projections

/// Puts the mutations of a restore into an empty store in the order of the rows they touch
/// (docs/ARCHITECTURE.md#changelog-and-restore): B-trees filled in key order append to their
/// last page, where filled in log order every write seeks a random page.
///
/// Reordering is exact because the stores decide nothing: mutations of different rows commute,
/// and every mutation gets a *group* key (`ChangelogWriter.sortRecord`) — its table and the part
/// of the row key that every mutation able to touch the same row shares. Mutations of one group
/// keep their log order. Two groups that happen to share a key only keep more of the log order.
///
/// Memory is bounded: mutations are kept encoded (the changelog's own format) in a buffer of
/// half `memoryLimit`; a full buffer is sorted and written to a run file in `directory` in the
/// background while the other half fills. The runs are merged at the end. The files go when
/// the sorter does.
public final class ChangelogSorter {
    /// One buffer's records and where each starts with its key's first 8 bytes (most
    /// comparisons end there).
    private typealias Starts = [(prefix: UInt64, start: Int)]

    private let bufferBytes: Int
    private let directory: URL
    /// Records `[key length: 4][key][mutation length: 4][mutation]`.
    private var writer = ChangelogWriter()
    private var starts: Starts = []
    /// The run being sorted and written; it gives its buffers back, emptied.
    private var spilling: Task<([UInt8], Starts), any Error>?
    private var runs: [URL] = []
    private var createdDirectory = false
    public private(set) var count = 0
    /// Run files written so far.
    var runFiles: Int { runs.count }

    public init(memoryLimit: Int = 64 << 20, directory: URL = FileManager.default.temporaryDirectory) {
        bufferBytes = memoryLimit / 2
        self.directory = directory.appendingPathComponent("pushline-restore-\(UUID().uuidString.lowercased())")
    }

    deinit {
        spilling?.cancel()
        if createdDirectory { try? FileManager.default.removeItem(at: directory) }
    }

    public func add(_ mutation: Mutation) async throws {
        // Allocated once: growing by doubling would copy it and leave more of it resident.
        if writer.bytes.capacity == 0 { writer.bytes.reserveCapacity(bufferBytes + (1 << 20)) }
        let start = writer.bytes.count
        writer.sortRecord(mutation)
        let keyStart = start + 4, keyEnd = keyStart + Self.fixed32(writer.bytes, at: start)
        var prefix: UInt64 = 0
        for i in 0..<8 { prefix = prefix << 8 | UInt64(keyStart + i < keyEnd ? writer.bytes[keyStart + i] : 0) }
        starts.append((prefix, start))
        count += 1
        if writer.bytes.count >= bufferBytes { try await spill() }
    }

    /// Every mutation added, in group order, in chunks of about `chunk` mutations; then the
    /// sorter is empty. A chunk ends where a group does (`wholeGroups`: it holds every mutation
    /// of each group in it), unless one group fills `maxChunkFactor × chunk`: then the chunks
    /// that hold parts of it are cut where they fill, and are not `wholeGroups`.
    public func drain(chunk: Int, _ body: (SortedChunk) async throws -> Void) async throws {
        var cutter = ChunkCutter(size: chunk)
        if runs.isEmpty {
            Self.sort(&starts, of: writer.bytes)
            let bytes = writer.bytes
            var previous = -1
            for (_, start) in starts {
                let newGroup = previous < 0 || bytes.withUnsafeBufferPointer { Self.compareKeys($0, previous, $0, start) != 0 }
                if let whole = cutter.cut(before: newGroup) { try await body(cutter.take(wholeGroups: whole)) }
                let key = Self.fixed32(bytes, at: start)
                var reader = ChangelogReader(bytes, at: start + 8 + key, trusted: true)
                cutter.append(try reader.mutation(), newGroup: newGroup)
                previous = start
            }
        } else {
            if !starts.isEmpty { try await spill() }
            _ = try await spilling?.value
            spilling = nil
            // The merge needs only the runs' read buffers.
            writer.bytes = []
            starts = []
            // The runs' read buffers share `mergeBufferBytes`, so that the merge's memory does not
            // grow with the number of runs (with the log).
            let readSize = max(Self.minimumReadSize, Self.mergeBufferBytes / runs.count)
            var readers = try runs.map { try RunReader(url: $0, readSize: readSize) }
            // A binary heap of run indexes, least key (then earliest run) first.
            var heap = readers.indices.filter { readers[$0].hasRecord }
            func less(_ a: Int, _ b: Int) -> Bool {
                let order = readers[a].compareKey(with: readers[b])
                return order != 0 ? order < 0 : a < b
            }
            func siftDown(_ from: Int) {
                var i = from
                while true {
                    let l = 2 * i + 1, r = l + 1
                    var m = i
                    if l < heap.count && less(heap[l], heap[m]) { m = l }
                    if r < heap.count && less(heap[r], heap[m]) { m = r }
                    if m == i { return }
                    heap.swapAt(i, m)
                    i = m
                }
            }
            for i in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
            // The group key of the last mutation taken (none yet: nil).
            var lastKey: [UInt8]?
            while let run = heap.first {
                let newGroup = lastKey.map { !readers[run].hasKey($0) } ?? true
                if newGroup {
                    lastKey = lastKey ?? []
                    lastKey!.removeAll(keepingCapacity: true)
                    lastKey!.append(contentsOf: readers[run].key)
                }
                if let whole = cutter.cut(before: newGroup) { try await body(cutter.take(wholeGroups: whole)) }
                cutter.append(try readers[run].mutation(), newGroup: newGroup)
                if try readers[run].advance() {
                    siftDown(0)
                } else {
                    heap.swapAt(0, heap.count - 1)
                    heap.removeLast()
                    siftDown(0)
                }
            }
        }
        if !cutter.out.isEmpty { try await body(cutter.take(wholeGroups: cutter.startsGroup)) }
        writer.bytes = []
        starts = []
        for run in runs { try? FileManager.default.removeItem(at: run) }
        runs = []
        count = 0
    }

    /// How many times `chunk` one group may fill before its mutations are cut into several chunks.
    static let maxChunkFactor = 4

    /// Where `drain` cuts its chunks.
    private struct ChunkCutter {
        let size: Int
        var out: [Mutation] = []
        var groupStarts: [Int] = []
        /// Whether the chunk being collected began with a group's first mutation.
        var startsGroup = true

        init(size: Int) {
            self.size = size
            out.reserveCapacity(size)
        }

        /// Before the next mutation: nil to add it to this chunk, or whether the chunk, cut here,
        /// holds whole groups.
        mutating func cut(before newGroup: Bool) -> Bool? {
            guard out.count >= size else { return nil }
            if newGroup {
                defer { startsGroup = true }
                return startsGroup
            }
            guard out.count >= size * ChangelogSorter.maxChunkFactor else { return nil }
            startsGroup = false
            return false
        }

        mutating func append(_ mutation: Mutation, newGroup: Bool) {
            if newGroup || out.isEmpty { groupStarts.append(out.count) }
            out.append(mutation)
        }

        mutating func take(wholeGroups: Bool) -> SortedChunk {
            defer {
                out.removeAll(keepingCapacity: true)
                groupStarts.removeAll(keepingCapacity: true)
            }
            return SortedChunk(mutations: out, groupStarts: groupStarts, wholeGroups: wholeGroups)
        }
    }

    /// What the merge reads its runs into, together (each run's part is read once more while the
    /// last record read is kept: up to twice this in all).
    static let mergeBufferBytes = 16 << 20
    static let minimumReadSize = 64 << 10

    /// Sorts the records of `bytes` by key; equal keys keep the order they were added in.
    private static func sort(_ starts: inout Starts, of bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { bytes in
            starts.sort { a, b in
                if a.prefix != b.prefix { return a.prefix < b.prefix }
                let order = compareKeys(bytes, a.start, bytes, b.start)
                return order != 0 ? order < 0 : a.start < b.start
            }
        }
    }

    /// Hands the buffer to a task that sorts it and writes it to the next run file, and goes on
    /// with the buffer the run before gave back (one run at a time).
    private func spill() async throws {
        var (spare, spareStarts): ([UInt8], Starts) = ([], [])
        if let spilling { (spare, spareStarts) = try await spilling.value }
        if !createdDirectory {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            createdDirectory = true
        }
        let url = directory.appendingPathComponent("run-\(runs.count)")
        runs.append(url)
        let bytes = writer.bytes
        let records = starts
        writer.bytes = spare
        starts = spareStarts
        spilling = Task.detached { [bytes, records, url] in try ChangelogSorter.writeRun(bytes, records, to: url) }
    }

    private static func writeRun(_ bytes: [UInt8], _ starts: Starts, to url: URL) throws -> ([UInt8], Starts) {
        var (bytes, starts) = (bytes, starts)
        sort(&starts, of: bytes)
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw ChangelogFormatError("cannot create the restore's run file \(url.path)")
        }
        let file = try FileHandle(forWritingTo: url)
        defer { try? file.close() }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        for (_, start) in starts {
            let end = start + 8 + fixed32(bytes, at: start) + fixed32(bytes, at: start + 4 + fixed32(bytes, at: start))
            buffer.append(contentsOf: bytes[start..<end])
            if buffer.count >= 1 << 20 {
                try file.write(contentsOf: buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try file.write(contentsOf: buffer)
        bytes.removeAll(keepingCapacity: true)
        starts.removeAll(keepingCapacity: true)
        return (bytes, starts)
    }

    static func fixed32(_ bytes: some RandomAccessCollection<UInt8>, at index: Int) -> Int {
        let i = bytes.index(bytes.startIndex, offsetBy: index)
        return Int(bytes[i]) | Int(bytes[bytes.index(i, offsetBy: 1)]) << 8 | Int(bytes[bytes.index(i, offsetBy: 2)]) << 16
            | Int(bytes[bytes.index(i, offsetBy: 3)]) << 24
    }

    /// Compares the keys of the records at `a` and `b`: bytewise, a prefix first.
    static func compareKeys(_ x: UnsafeBufferPointer<UInt8>, _ a: Int, _ y: UnsafeBufferPointer<UInt8>, _ b: Int) -> Int {
        let la = fixed32(x, at: a), lb = fixed32(y, at: b)
        let order = memcmp(x.baseAddress! + a + 4, y.baseAddress! + b + 4, min(la, lb))
        return order != 0 ? Int(order) : la - lb
    }

    /// One run file, read `readSize` bytes at a time; `position` is the current record's start.
    private struct RunReader {
        let file: FileHandle
        let readSize: Int
        var buffer: [UInt8] = []
        var position = 0
        var hasRecord = false

        init(url: URL, readSize: Int) throws {
            file = try FileHandle(forReadingFrom: url)
            self.readSize = readSize
            hasRecord = try advanceTo(0)
        }

        /// Makes the record at `position + skip` whole in the buffer; false at the end of the file.
        private mutating func advanceTo(_ skip: Int) throws -> Bool {
            position += skip
            while true {
                let available = buffer.count - position
                if available >= 8 {
                    let key = ChangelogSorter.fixed32(buffer, at: position)
                    if available >= 8 + key, available >= 8 + key + ChangelogSorter.fixed32(buffer, at: position + 4 + key) { return true }
                }
                buffer.removeFirst(position)
                position = 0
                guard let more = try file.read(upToCount: readSize), !more.isEmpty else {
                    guard buffer.isEmpty else { throw ChangelogFormatError("a restore run file ends inside a record") }
                    try file.close()
                    return false
                }
                buffer.append(contentsOf: more)
            }
        }

        var recordLength: Int {
            let key = ChangelogSorter.fixed32(buffer, at: position)
            return 8 + key + ChangelogSorter.fixed32(buffer, at: position + 4 + key)
        }

        mutating func advance() throws -> Bool {
            hasRecord = try advanceTo(recordLength)
            return hasRecord
        }

        func mutation() throws -> Mutation {
            var reader = ChangelogReader(buffer, at: position + 8 + ChangelogSorter.fixed32(buffer, at: position), trusted: true)
            return try reader.mutation()
        }

        /// The current record's group key.
        var key: ArraySlice<UInt8> {
            buffer[(position + 4)..<(position + 4 + ChangelogSorter.fixed32(buffer, at: position))]
        }

        func hasKey(_ key: [UInt8]) -> Bool {
            let length = ChangelogSorter.fixed32(buffer, at: position)
            guard length == key.count else { return false }
            return buffer.withUnsafeBufferPointer { x in key.withUnsafeBufferPointer { y in memcmp(x.baseAddress! + position + 4, y.baseAddress!, length) == 0 } }
        }

        func compareKey(with other: RunReader) -> Int {
            buffer.withUnsafeBufferPointer { x in
                other.buffer.withUnsafeBufferPointer { y in ChangelogSorter.compareKeys(x, position, y, other.position) }
            }
        }
    }
}

extension ChangelogWriter {
    package mutating func fixed32(_ value: Int) {
        withUnsafeBytes(of: UInt32(value).littleEndian) { bytes.append(contentsOf: $0) }
    }

    package mutating func patch32(at index: Int, _ value: Int) {
        withUnsafeBytes(of: UInt32(value).littleEndian) { raw in
            for i in 0..<4 { bytes[index + i] = raw[i] }
        }
    }

    /// A text key part: its bytes and a 0 (so that a shorter text sorts first, as in the tables).
    package mutating func keyText(_ value: String) {
        var s = value
        s.withUTF8 { bytes.append(contentsOf: $0) }
        bytes.append(0)
    }
}
