// Package media holds the contract between raw media (photos, documents)
// and the bags made from them: which bytes a bag came from (Media), which
// featurizer turned them into instances (Featurizer), and where in the
// media each instance lies (Region: a box and a COCO run-length mask for a
// photo, a code-point and a byte span for a passage of text).
//
// The types here are what the wire, the models' metadata and the feature
// cache all name; the decoders, segmenters and featurizers live in the
// subpackages (photo, imageseg, imagefeat, text).
package media
