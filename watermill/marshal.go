package watermill

import (
	"strconv"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ringwal/ringwal"
)

// UUIDHeader is the ringwal header that carries a watermill message's UUID
// (the name watermill-kafka uses for the same purpose). A message enqueued
// without it, by plain ringwal code, gets "ringwal-" and its ringwal ID as
// UUID.
const UUIDHeader = "_watermill_message_uuid"

// toRingwal turns a watermill message into a ringwal one: the payload as
// is, the metadata as headers, the UUID under UUIDHeader (which a metadata
// entry of that name cannot override). key is the ringwal Key ("" = none).
func toRingwal(msg *message.Message, key string) ringwal.Message {
	h := make(map[string]string, len(msg.Metadata)+1)
	for k, v := range msg.Metadata {
		h[k] = v
	}
	h[UUIDHeader] = msg.UUID
	return ringwal.Message{Key: key, Payload: msg.Payload, Headers: h}
}

// fromRingwal turns a delivery back into a watermill message. Its headers
// are copied: the engine keeps its own.
func fromRingwal(d ringwal.Delivery) *message.Message {
	uuid, ok := d.Message.Headers[UUIDHeader]
	if !ok {
		uuid = "ringwal-" + strconv.FormatUint(uint64(d.ID), 10)
	}
	msg := message.NewMessage(uuid, d.Message.Payload)
	for k, v := range d.Message.Headers {
		if k != UUIDHeader {
			msg.Metadata[k] = v
		}
	}
	return msg
}
