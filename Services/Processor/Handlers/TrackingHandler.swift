import Contracts
import Foundation
import OutboundRendering
import Projections

/// What became of one tracking event.
package enum TrackingOutcome: Hashable, Sendable {
    /// Stored against its known delivery: a device's first report of the action, or a repeat.
    case counted
    /// Stored before its delivery's send was applied; the send settles it.
    case parked
    case rejected(Reason)

    package enum Reason: String, Sendable {
        /// The delivery was sent with tracking off.
        case trackingOff = "tracking-off"
        /// The broadlogId is not one the delivery sent.
        case foreignBroadlog = "foreign-broadlog"
    }

    package var label: String {
        switch self {
        case .counted: "counted"
        case .parked: "parked"
        case .rejected(let reason): reason.rawValue
        }
    }
}

/// Applies engagement reports (docs/API.md#engagement-tracking).
///
/// Counts must come out exact whatever the order of arrival, and reports travel on the
/// tracking topic while sends travel on the notification topic, so a report may be applied
/// before its send. Hence the rule: a report is only ever *stored* as a (delivery, app, action,
/// device) row, with a repeat count, and statistics are read from those rows bounded by the
/// delivery row. A report whose delivery is known is checked at once; one whose delivery is
/// not known yet is stored and its (delivery, app) pair marked parked, and the send, when
/// applied, deletes what it cannot own and takes the rest. Reports whose send does not come
/// within the park time, counted in the app's command times, are dropped. Every one of these decisions
/// is made here, over the rows the batch loaded; the stores only write them.
///
/// A broadlogId is checked against the delivery id and the server's keys alone (`MessageId`'s
/// check digits), so a foreign or forged id is refused even before its delivery is known; only
/// "past the sent count" needs the delivery row. A report ingest stamped keyed
/// (`TrackingReported.keyedIds`) names only keyed ids: without a key only the server holds,
/// nobody — not even a recipient holding its own id and the delivery id — can name another
/// recipient's message, so each recipient counts once per action.
package struct TrackingHandler: CommandHandler {
    /// The keys of keyed message ids: a keyed report's ids must be made with one of them.
    package let messageIdKeys: MessageIdKeys

    package init(messageIdKeys: MessageIdKeys = .none) {
        self.messageIdKeys = messageIdKeys
    }

    package func addNeeds(of c: TrackingReported, to query: inout StateQuery) {
        query.deliveryIds.insert(c.deliveryId)
        query.parkedDeliveries.insert(c.deliveryId)
    }

    package func apply(_ c: TrackingReported, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        let at = context.at
        let pair = TrackingPair(deliveryId: c.deliveryId, appId: c.mobileAppId, part: context.part)
        // Another app's delivery of this id is one this app never sent: the reports park, and
        // expire unless this app sends that id.
        let delivery = state.delivery(c.deliveryId, app: c.mobileAppId, part: context.part)
        if let delivery {
            guard delivery.tracking else {
                state.rejectTracking(.trackingOff, events: c.events.count)
                return .rejected(TrackingOutcome.Reason.trackingOff.rawValue)
            }
        } else {
            // Reports parked longer than the park time are gone before this one parks anew.
            state.expireIfDue(pair)
        }
        // A report cannot tell which key its send used: one series per key held (one, outside a
        // rotation), each one MAC for the whole report.
        let candidates = messageIdKeys.candidates(for: c.deliveryId, keyed: c.idsAreKeyed)
        var stored = 0
        for event in c.events {
            // In an app in parts, a part counts the devices it sent to: their message indexes are
            // its own (`AppParts.messageIndex`); ingest sends each report to its index's part.
            guard let index = Self.index(of: event.broadlogId, in: candidates), AppParts.part(ofMessageIndex: index) == context.part,
                  delivery.map({ $0.sentTo(messageIndex: index) }) ?? true else {
                state.rejectTracking(.foreignBroadlog)
                continue
            }
            state.countTracking(pair, TrackingRowKey(action: event.action, messageIndex: index),
                                outcome: delivery == nil ? .parked : .counted, at: at)
            stored += 1
        }
        return stored > 0 ? .applied : .rejected(TrackingOutcome.Reason.foreignBroadlog.rawValue)
    }

    /// The index `broadlogId` names in the first of `candidates` that made it, else nil.
    private static func index(of broadlogId: String, in candidates: [MessageId.Series]) -> Int? {
        for series in candidates {
            if let index = series.index(of: broadlogId) { return index }
        }
        return nil
    }

    /// Called when a send is applied, before its delivery is recorded: the app part's pair
    /// reported on before it is dropped if its park time passed, refused whole if the send has
    /// tracking off, and otherwise taken, less the reports past the sent count. Other apps'
    /// reports on the same id, and other parts', are theirs: left parked, to expire by their own
    /// clock.
    package static func settle(_ delivery: DeliveryRow, state: inout BatchState) {
        for pair in state.trackingPairs(of: delivery.deliveryId) where pair.appId == delivery.appId && pair.part == delivery.part {
            if state.expireIfDue(pair) { continue }
            let reports = state.trackingReports(of: pair)
            if !delivery.tracking {
                state.rejectTracking(.trackingOff, events: reports.values.reduce(0, +))
                state.dropTracking(pair)
                continue
            }
            let beyond = reports.filter { !delivery.sentTo(messageIndex: $0.key.messageIndex) }
            if !beyond.isEmpty {
                state.rejectTracking(.foreignBroadlog, events: beyond.values.reduce(0, +))
                state.deleteTracking(pair, Set(beyond.keys))
            }
            state.unparkTracking(pair)
        }
    }
}
