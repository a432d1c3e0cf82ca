import Contracts
import Foundation
import Projections

/// What became of one tracking event.
enum TrackingOutcome: Hashable, Sendable {
    /// Stored against its known delivery: a device's first report of the action, or a repeat.
    case counted
    /// Stored before its delivery's send was applied; the send settles it.
    case parked
    case rejected(Reason)

    enum Reason: String, Sendable {
        /// The delivery was sent with tracking off.
        case trackingOff = "tracking-off"
        /// The delivery id belongs to another app.
        case unknownDelivery = "unknown-delivery"
        /// The broadlogId is not one the delivery sent.
        case foreignBroadlog = "foreign-broadlog"
    }

    var label: String {
        switch self {
        case .counted: "counted"
        case .parked: "parked"
        case .rejected(let reason): reason.rawValue
        }
    }
}

/// Applies engagement reports (docs/API.md#engagement-tracking).
///
/// Counts must come out exact whatever the order of arrival, and the tracking topic is keyed
/// by delivery while sends travel on the notification topic, so a report may be applied before
/// its send. Hence the rule: a report is only ever *stored* as a (delivery, app, action,
/// device) row, with a repeat count, and statistics are read from those rows bounded by the
/// delivery row. A report whose delivery is known is checked at once; one whose delivery is
/// not known yet is stored (parked), and the send, when applied, discards whatever it cannot
/// own. Both orders therefore end in the same rows.
///
/// A broadlogId is checked against the delivery id alone (`MessageId`'s check digits), so a
/// foreign id is refused even before its delivery is known; only "past the sent count" needs
/// the delivery row.
struct TrackingHandler: CommandHandler {
    func addNeeds(of c: TrackingReported, to query: inout StateQuery) { query.deliveryIds.insert(c.deliveryId) }

    func apply(_ c: TrackingReported, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        let at = context.at
        let delivery = state.delivery(c.deliveryId)
        if let delivery {
            guard delivery.appId == c.mobileAppId else {
                state.rejectTracking(.unknownDelivery, events: c.events.count)
                return .rejected(TrackingOutcome.Reason.unknownDelivery.rawValue)
            }
            guard delivery.tracking else {
                state.rejectTracking(.trackingOff, events: c.events.count)
                return .rejected(TrackingOutcome.Reason.trackingOff.rawValue)
            }
        }
        let series = MessageId.Series(deliveryId: c.deliveryId)
        var stored = 0
        for event in c.events {
            guard let index = series.index(of: event.broadlogId), index < delivery?.sent ?? Int.max else {
                state.rejectTracking(.foreignBroadlog)
                continue
            }
            state.countTracking(app: c.mobileAppId, delivery: c.deliveryId, action: event.action, messageIndex: index,
                                outcome: delivery == nil ? .parked : .counted, at: at)
            stored += 1
        }
        return stored > 0 ? .applied : .rejected(TrackingOutcome.Reason.foreignBroadlog.rawValue)
    }

    /// Called when a send is applied: the reports stored before it that it cannot own (another
    /// app's, past its sent count, or any when tracking was off) are rejected now and deleted.
    static func settle(_ delivery: DeliveryRow, state: inout BatchState) {
        for event in state.trackedBeforeSend(delivery.deliveryId) {
            let reports = 1 + event.repeats
            if event.appId != delivery.appId {
                state.rejectTracking(.unknownDelivery, events: reports)
            } else if !delivery.tracking {
                state.rejectTracking(.trackingOff, events: reports)
            } else if event.messageIndex >= delivery.sent {
                state.rejectTracking(.foreignBroadlog, events: reports)
            }
        }
        // Always written, not only when the loaded rows show something to discard: a report
        // applied by another processor after this batch's load is then still caught.
        state.discardTracking(of: delivery)
    }
}
